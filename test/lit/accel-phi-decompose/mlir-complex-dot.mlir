// A complex<f32> dot product from MLIR: scf.for with a complex iter_arg and
// complex ops with fastmath<reassoc,contract>, lowered to LLVM IR by
// mlir-opt and mlir-translate of the same release. The accumulator arrives
// as `phi { float, float }`; O3 alone keeps it and runs the loop scalar;
// with the plugin no aggregate phi is left and the loop vectorizes.

// REQUIRES: mlir-tools, x86-registered-target
// RUN: %mlir-opt %s --convert-complex-to-standard --convert-scf-to-cf --convert-complex-to-llvm --convert-math-to-llvm \
// RUN:   --finalize-memref-to-llvm --convert-arith-to-llvm --convert-func-to-llvm \
// RUN:   --convert-cf-to-llvm --reconcile-unrealized-casts \
// RUN:   | %mlir-translate --mlir-to-llvmir -o %t.ll
// RUN: FileCheck %s --check-prefix=INPUT < %t.ll
// RUN: opt %loadaccel -passes=accel-phi-decompose -S %t.ll | FileCheck %s --check-prefix=PASS
// RUN: opt %loadaccel -passes='default<O3>' -S %t.ll -mtriple=x86_64-unknown-linux-gnu -mattr=+avx2,+fma \
// RUN:   -pass-remarks=loop-vectorize -o %t.o3.ll 2>&1 | FileCheck %s --check-prefix=VEC
// RUN: FileCheck %s --check-prefix=O3 < %t.o3.ll
// RUN: opt %loadaccel -passes='default<O3>' -llvmaccel-auto=none -S %t.ll \
// RUN:   -mtriple=x86_64-unknown-linux-gnu -mattr=+avx2,+fma -o %t.plain.ll
// RUN: FileCheck %s --check-prefix=PLAIN < %t.plain.ll

// INPUT: phi { float, float }
// PASS-NOT: phi {
// PASS: phi float [ {{.*}} ], [ 0.000000e+00,
// PASS-NEXT: phi float [ {{.*}} ], [ 0.000000e+00,
// PASS-NOT: phi {
// VEC: remark: {{.*}} vectorized loop (vectorization width: 8
// O3-NOT: phi {
// O3: fadd reassoc contract <8 x float>
// O3-NOT: phi {
// PLAIN: phi { float, float }
// PLAIN-NOT: <8 x float>

func.func @cdot(%a: memref<?xcomplex<f32>>, %b: memref<?xcomplex<f32>>, %n: index) -> complex<f32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zf = arith.constant 0.0 : f32
  %z = complex.create %zf, %zf : complex<f32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (complex<f32>) {
    %x = memref.load %a[%i] : memref<?xcomplex<f32>>
    %y = memref.load %b[%i] : memref<?xcomplex<f32>>
    %p = complex.mul %x, %y fastmath<reassoc,contract> : complex<f32>
    %s = complex.add %acc, %p fastmath<reassoc,contract> : complex<f32>
    scf.yield %s : complex<f32>
  }
  return %r : complex<f32>
}
