; Pass parameters: the -print-pipeline-passes round trip, the ends of the
; max-elements range, the exact text of each parse error, and what each
; parameter changes.

; RUN: opt %loadaccel -passes='accel-phi-decompose' -print-pipeline-passes -disable-output %s \
; RUN:   | FileCheck %s --check-prefix=DEFAULT
; DEFAULT: accel-phi-decompose<max-elements=16;vectors;anchors>

; RUN: opt %loadaccel -print-pipeline-passes -disable-output %s \
; RUN:   -passes='accel-phi-decompose<max-elements=4;no-vectors;no-anchors>' \
; RUN:   | FileCheck %s --check-prefix=ALL
; ALL: accel-phi-decompose<max-elements=4;no-vectors;no-anchors>
; The printed pipeline parses back to itself.
; RUN: opt %loadaccel -print-pipeline-passes -disable-output %s \
; RUN:   -passes='function(accel-phi-decompose<max-elements=4;no-vectors;no-anchors>)' \
; RUN:   | FileCheck %s --check-prefix=ALL

; RUN: opt %loadaccel -print-pipeline-passes -disable-output %s \
; RUN:   -passes='accel-phi-decompose<max-elements=1;vectors;anchors>' | FileCheck %s --check-prefix=MIN
; MIN: accel-phi-decompose<max-elements=1;vectors;anchors>
; RUN: opt %loadaccel -print-pipeline-passes -disable-output %s \
; RUN:   -passes='accel-phi-decompose<max-elements=256>' | FileCheck %s --check-prefix=MAX
; MAX: accel-phi-decompose<max-elements=256;vectors;anchors>

; RUN: not opt %loadaccel -passes='accel-phi-decompose<foo>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=UNKNOWN
; UNKNOWN: LLVMAccel: error: invalid accel-phi-decompose pass parameter 'foo'{{$}}
; RUN: not opt %loadaccel -passes='accel-phi-decompose<max-elements=0>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=ZERO
; ZERO: LLVMAccel: error: invalid accel-phi-decompose pass parameter 'max-elements=0': max-elements must be an integer from 1 to 256
; RUN: not opt %loadaccel -passes='accel-phi-decompose<max-elements=257>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=TOOBIG
; TOOBIG: LLVMAccel: error: invalid accel-phi-decompose pass parameter 'max-elements=257': max-elements must be an integer from 1 to 256
; RUN: not opt %loadaccel -passes='accel-phi-decompose<max-elements=x>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=NOTINT
; NOTINT: LLVMAccel: error: invalid accel-phi-decompose pass parameter 'max-elements=x': max-elements must be an integer from 1 to 256
; RUN: not opt %loadaccel -passes='accel-phi-decompose<max-elements>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=NOVALUE
; NOVALUE: LLVMAccel: error: invalid accel-phi-decompose pass parameter 'max-elements': max-elements must be an integer from 1 to 256
; RUN: not opt %loadaccel -passes='accel-phi-decompose<vectors=1>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=VECVALUE
; VECVALUE: LLVMAccel: error: invalid accel-phi-decompose pass parameter 'vectors=1': vectors takes no value
; RUN: not opt %loadaccel -passes='accel-phi-decompose<no-anchors=1>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=ANCHORVALUE
; ANCHORVALUE: LLVMAccel: error: invalid accel-phi-decompose pass parameter 'no-anchors=1': anchors takes no value
; RUN: not opt %loadaccel -passes='accel-phi-decompose<vectors;no-vectors>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=DUPFLAG
; DUPFLAG: LLVMAccel: error: invalid accel-phi-decompose pass parameter 'no-vectors': vectors is given twice
; RUN: not opt %loadaccel -passes='accel-phi-decompose<anchors;anchors>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=DUPANCHOR
; DUPANCHOR: LLVMAccel: error: invalid accel-phi-decompose pass parameter 'anchors': anchors is given twice
; RUN: not opt %loadaccel -passes='accel-phi-decompose<max-elements=4;max-elements=8>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=DUPINT
; DUPINT: LLVMAccel: error: invalid accel-phi-decompose pass parameter 'max-elements=8': max-elements is given twice
; RUN: not opt %loadaccel -passes='accel-phi-decompose<no-max-elements>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=NOINT
; NOINT: LLVMAccel: error: invalid accel-phi-decompose pass parameter 'no-max-elements'{{$}}
; RUN: not opt %loadaccel -passes='accel-phi-decompose<>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=EMPTY
; EMPTY: LLVMAccel: error: invalid accel-phi-decompose pass parameter '': empty parameter
; RUN: not opt %loadaccel -passes='accel-phi-decompose<vectors;>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=EMPTY

; max-elements: a 4-field struct is split at 4 and declined at 3.
; RUN: opt %loadaccel -passes='accel-phi-decompose<max-elements=4>' -S %s | FileCheck %s --check-prefix=MAX4
; RUN: opt %loadaccel -passes='accel-phi-decompose<max-elements=3>' -S %s \
; RUN:   -pass-remarks-missed=accel-phi-decompose 2>&1 | FileCheck %s --check-prefix=MAX3
; MAX4: %s.3 = phi i64
; MAX4-NOT: phi {
; MAX3: remark: {{.*}} phi of { i64, i64, i64, i64 } has more than max-elements=3 elements
; MAX3: %s = phi { i64, i64, i64, i64 }
; (vectors and anchors are exercised in vectors.ll and anchors.ll.)

define i64 @four(i64 %n) {
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %s = phi { i64, i64, i64, i64 } [ zeroinitializer, %entry ], [ %s.next, %loop ]
  %a = extractvalue { i64, i64, i64, i64 } %s, 3
  %a.next = add i64 %a, %i
  %s.next = insertvalue { i64, i64, i64, i64 } %s, i64 %a.next, 3
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  ret i64 %a.next
}
