// A memref descriptor selected by scf.if, from MLIR: both branches view an
// input as a memref of %n elements, so the merged descriptor
// `phi { ptr, ptr, i64, [1 x i64], [1 x i64] }` splits into two pointer
// phis while its offset, size and stride fold to the values both paths
// share (the loop bound is the argument %n again, for SCEV). With the plugin,
// default<O3> leaves no aggregate phi and vectorizes the loop.

// REQUIRES: mlir-tools, x86-registered-target
// RUN: %mlir-opt %s --convert-scf-to-cf --finalize-memref-to-llvm --convert-arith-to-llvm \
// RUN:   --convert-func-to-llvm --convert-cf-to-llvm --reconcile-unrealized-casts \
// RUN:   | %mlir-translate --mlir-to-llvmir -o %t.ll
// RUN: FileCheck %s --check-prefix=INPUT < %t.ll
// RUN: opt %loadaccel -passes=accel-phi-decompose -S %t.ll \
// RUN:   -pass-remarks=accel-phi-decompose 2>%t.remarks | FileCheck %s --check-prefix=PASS
// RUN: FileCheck %s --check-prefix=REMARK < %t.remarks
// RUN: opt %loadaccel -passes='default<O3>' -S %t.ll -mtriple=x86_64-unknown-linux-gnu -mattr=+avx2 \
// RUN:   | FileCheck %s --check-prefix=O3

// INPUT: phi { ptr, ptr, i64, [1 x i64], [1 x i64] }
// REMARK: split phi of { ptr, ptr, i64, [1 x i64], [1 x i64] } into 5 scalar phis
// PASS-LABEL: define void @pick_scale(
// PASS-SAME: i64 [[N:%[0-9]+]])
// PASS: phi ptr
// PASS-NEXT: phi ptr
// PASS-NOT: phi i64 [ 0
// PASS-NOT: phi {
// PASS: icmp slt i64 %{{[0-9]+}}, [[N]]
// O3-NOT: phi {
// O3: vector.body:
// O3: fmul <{{[0-9]+}} x float>

func.func @pick_scale(%a: memref<?xf32>, %b: memref<?xf32>, %out: memref<?xf32>, %use_a: i1, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %two = arith.constant 2.0 : f32
  %m = scf.if %use_a -> memref<?xf32, strided<[?], offset: ?>> {
    %va = memref.reinterpret_cast %a to offset: [0], sizes: [%n], strides: [1] : memref<?xf32> to memref<?xf32, strided<[?], offset: ?>>
    scf.yield %va : memref<?xf32, strided<[?], offset: ?>>
  } else {
    %vb = memref.reinterpret_cast %b to offset: [0], sizes: [%n], strides: [1] : memref<?xf32> to memref<?xf32, strided<[?], offset: ?>>
    scf.yield %vb : memref<?xf32, strided<[?], offset: ?>>
  }
  %len = memref.dim %m, %c0 : memref<?xf32, strided<[?], offset: ?>>
  scf.for %i = %c0 to %len step %c1 {
    %x = memref.load %m[%i] : memref<?xf32, strided<[?], offset: ?>>
    %t = arith.mulf %x, %two : f32
    memref.store %t, %out[%i] : memref<?xf32>
  }
  return
}
