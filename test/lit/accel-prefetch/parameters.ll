; Pass parameters: the -print-pipeline-passes round trip, the ends of each
; range, and the exact text of each parse error (one message per kind).

; RUN: opt %loadaccel -passes='accel-prefetch' -print-pipeline-passes -disable-output %s \
; RUN:   | FileCheck %s --check-prefix=DEFAULT
; DEFAULT: accel-prefetch<max-lines=8;resident-bytes=1048576;indirect;strided;no-writes;size-check>

; RUN: opt %loadaccel -print-pipeline-passes -disable-output %s \
; RUN:   -passes='accel-prefetch<distance=24;latency=400;cache-line=128;min-stride=1024;max-lines=4;min-work=0;in-flight=8;resident-bytes=4096;no-indirect;no-strided;writes;no-size-check>' \
; RUN:   | FileCheck %s --check-prefix=ALL
; ALL: accel-prefetch<distance=24;latency=400;cache-line=128;min-stride=1024;max-lines=4;min-work=0;in-flight=8;resident-bytes=4096;no-indirect;no-strided;writes;no-size-check>

; The printed pipeline parses back to itself.
; RUN: opt %loadaccel -print-pipeline-passes -disable-output %s \
; RUN:   -passes='function(accel-prefetch<distance=24;latency=400;cache-line=128;min-stride=1024;max-lines=4;min-work=0;in-flight=8;resident-bytes=4096;no-indirect;no-strided;writes;no-size-check>)' \
; RUN:   | FileCheck %s --check-prefix=ALL

; RUN: not opt %loadaccel -passes='accel-prefetch<foo>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=UNKNOWN
; UNKNOWN: LLVMAccel: error: invalid accel-prefetch pass parameter 'foo'{{$}}
; UNKNOWN-NEXT: {{.*}}accel-prefetch<foo>

; RUN: not opt %loadaccel -passes='accel-prefetch<distance>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=NOVALUE
; NOVALUE: LLVMAccel: error: invalid accel-prefetch pass parameter 'distance': distance must be an integer from 1 to 65536

; RUN: not opt %loadaccel -passes='accel-prefetch<latency=x>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=NOTINT
; NOTINT: LLVMAccel: error: invalid accel-prefetch pass parameter 'latency=x': latency must be an integer from 1 to 100000

; RUN: not opt %loadaccel -passes='accel-prefetch<distance=0>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=ZERO
; ZERO: LLVMAccel: error: invalid accel-prefetch pass parameter 'distance=0': distance must be an integer from 1 to 65536

; RUN: not opt %loadaccel -passes='accel-prefetch<distance=65537>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=TOOBIG
; TOOBIG: LLVMAccel: error: invalid accel-prefetch pass parameter 'distance=65537': distance must be an integer from 1 to 65536

; RUN: not opt %loadaccel -passes='accel-prefetch<distance=4294967295>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=UINTMAX
; UINTMAX: LLVMAccel: error: invalid accel-prefetch pass parameter 'distance=4294967295': distance must be an integer from 1 to 65536

; RUN: not opt %loadaccel -passes='accel-prefetch<distance=18446744073709551616>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=OVERFLOW
; OVERFLOW: LLVMAccel: error: invalid accel-prefetch pass parameter 'distance=18446744073709551616': distance must be an integer from 1 to 65536

; RUN: not opt %loadaccel -passes='accel-prefetch<distance=-1>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=NEGATIVE
; NEGATIVE: LLVMAccel: error: invalid accel-prefetch pass parameter 'distance=-1': distance must be an integer from 1 to 65536

; RUN: not opt %loadaccel -passes='accel-prefetch<latency=0>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=LATENCY0
; LATENCY0: LLVMAccel: error: invalid accel-prefetch pass parameter 'latency=0': latency must be an integer from 1 to 100000

; RUN: not opt %loadaccel -passes='accel-prefetch<latency=100001>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=LATENCYBIG
; LATENCYBIG: LLVMAccel: error: invalid accel-prefetch pass parameter 'latency=100001': latency must be an integer from 1 to 100000

; RUN: not opt %loadaccel -passes='accel-prefetch<max-lines=0>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=MAXLINES
; MAXLINES: LLVMAccel: error: invalid accel-prefetch pass parameter 'max-lines=0': max-lines must be an integer from 1 to 64

; RUN: not opt %loadaccel -passes='accel-prefetch<max-lines=65>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=MAXLINESBIG
; MAXLINESBIG: LLVMAccel: error: invalid accel-prefetch pass parameter 'max-lines=65': max-lines must be an integer from 1 to 64

; RUN: not opt %loadaccel -passes='accel-prefetch<cache-line=96>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=POW2
; POW2: LLVMAccel: error: invalid accel-prefetch pass parameter 'cache-line=96': cache-line must be a power of two from 16 to 4096

; RUN: not opt %loadaccel -passes='accel-prefetch<cache-line=8>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=LINESMALL
; LINESMALL: LLVMAccel: error: invalid accel-prefetch pass parameter 'cache-line=8': cache-line must be a power of two from 16 to 4096

; RUN: not opt %loadaccel -passes='accel-prefetch<cache-line=8192>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=LINEBIG
; LINEBIG: LLVMAccel: error: invalid accel-prefetch pass parameter 'cache-line=8192': cache-line must be a power of two from 16 to 4096

; RUN: not opt %loadaccel -passes='accel-prefetch<min-stride=1073741825>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=MINSTRIDEBIG
; MINSTRIDEBIG: LLVMAccel: error: invalid accel-prefetch pass parameter 'min-stride=1073741825': min-stride must be an integer from 0 to 1073741824

; RUN: not opt %loadaccel -passes='accel-prefetch<writes=1>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=FLAGVALUE
; FLAGVALUE: LLVMAccel: error: invalid accel-prefetch pass parameter 'writes=1': writes takes no value

; RUN: not opt %loadaccel -passes='accel-prefetch<no-size-check=0>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=SIZECHECKVALUE
; SIZECHECKVALUE: LLVMAccel: error: invalid accel-prefetch pass parameter 'no-size-check=0': size-check takes no value

; RUN: not opt %loadaccel -passes='accel-prefetch<distance=8;distance=16>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=DUPLICATE
; DUPLICATE: LLVMAccel: error: invalid accel-prefetch pass parameter 'distance=16': distance is given twice

; RUN: not opt %loadaccel -passes='accel-prefetch<strided;no-strided>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=DUPFLAG
; DUPFLAG: LLVMAccel: error: invalid accel-prefetch pass parameter 'no-strided': strided is given twice

; RUN: not opt %loadaccel -passes='accel-prefetch<;;;>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=EMPTYITEM
; EMPTYITEM: LLVMAccel: error: invalid accel-prefetch pass parameter '': empty parameter

; RUN: not opt %loadaccel -passes='accel-prefetch<distance=8;>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=TRAILING
; TRAILING: LLVMAccel: error: invalid accel-prefetch pass parameter '': empty parameter

; RUN: not opt %loadaccel -passes='accel-prefetch<min-work=1000001>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=MINWORKBIG
; MINWORKBIG: LLVMAccel: error: invalid accel-prefetch pass parameter 'min-work=1000001': min-work must be an integer from 0 to 1000000

; RUN: not opt %loadaccel -passes='accel-prefetch<in-flight=0>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=INFLIGHT0
; INFLIGHT0: LLVMAccel: error: invalid accel-prefetch pass parameter 'in-flight=0': in-flight must be an integer from 1 to 1024

; RUN: not opt %loadaccel -passes='accel-prefetch<in-flight=1025>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=INFLIGHTBIG
; INFLIGHTBIG: LLVMAccel: error: invalid accel-prefetch pass parameter 'in-flight=1025': in-flight must be an integer from 1 to 1024

; RUN: not opt %loadaccel -passes='accel-prefetch<resident-bytes=1073741825>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=RESIDENTBIG
; RESIDENTBIG: LLVMAccel: error: invalid accel-prefetch pass parameter 'resident-bytes=1073741825': resident-bytes must be an integer from 0 to 1073741824

; RUN: not opt %loadaccel -passes='accel-prefetch<min-work=-1>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=MINWORKNEG
; MINWORKNEG: LLVMAccel: error: invalid accel-prefetch pass parameter 'min-work=-1': min-work must be an integer from 0 to 1000000

; An empty list is an error too; the bare name is not.
; RUN: not opt %loadaccel -passes='accel-prefetch<>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=EMPTYLIST
; EMPTYLIST: LLVMAccel: error: invalid accel-prefetch pass parameter '': empty parameter

; RUN: not opt %loadaccel -passes='accel-prefetch<foo=1>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=UNKNOWNVALUE
; UNKNOWNVALUE: LLVMAccel: error: invalid accel-prefetch pass parameter 'foo=1'{{$}}

; RUN: not opt %loadaccel -passes='accel-prefetch<no-distance>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=NODIST
; NODIST: LLVMAccel: error: invalid accel-prefetch pass parameter 'no-distance'{{$}}

; min-stride=0 is allowed (prefetch every affine access).
; RUN: opt %loadaccel -passes='accel-prefetch<min-stride=0>' -print-pipeline-passes -disable-output %s \
; RUN:   | FileCheck %s --check-prefix=MINSTRIDE0
; MINSTRIDE0: accel-prefetch<min-stride=0;max-lines=8;resident-bytes=1048576;indirect;strided;no-writes;size-check>

; The ends of every range are accepted.
; RUN: opt %loadaccel -print-pipeline-passes -disable-output %s \
; RUN:   -passes='accel-prefetch<distance=65536;latency=100000;cache-line=4096;min-stride=1073741824;max-lines=64;min-work=1000000;in-flight=1024;resident-bytes=1073741824>' \
; RUN:   | FileCheck %s --check-prefix=MAXIMA
; MAXIMA: accel-prefetch<distance=65536;latency=100000;cache-line=4096;min-stride=1073741824;max-lines=64;min-work=1000000;in-flight=1024;resident-bytes=1073741824;indirect;strided;no-writes;size-check>
; RUN: opt %loadaccel -print-pipeline-passes -disable-output %s \
; RUN:   -passes='accel-prefetch<distance=1;latency=1;cache-line=16;max-lines=1;min-work=0;in-flight=1;resident-bytes=0>' \
; RUN:   | FileCheck %s --check-prefix=MINIMA
; MINIMA: accel-prefetch<distance=1;latency=1;cache-line=16;max-lines=1;min-work=0;in-flight=1;resident-bytes=0;indirect;strided;no-writes;size-check>

define void @empty() {
  ret void
}
