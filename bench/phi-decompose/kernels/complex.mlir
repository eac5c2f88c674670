// The MLIR kernels of bench/phi-decompose: complex<f32> arithmetic with
// fastmath<reassoc,contract>, and a loop that carries a strided view.

// out[0] = sum_i a[i] * b[i]
func.func @cdot(%a: memref<?xcomplex<f32>>, %b: memref<?xcomplex<f32>>,
                %out: memref<1xcomplex<f32>>, %n: index) {
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
  memref.store %r, %out[%c0] : memref<1xcomplex<f32>>
  return
}

// y[i] = alpha * x[i] + y[i]
func.func @caxpy(%x: memref<?xcomplex<f32>>, %y: memref<?xcomplex<f32>>,
                 %re: f32, %im: f32, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %alpha = complex.create %re, %im : complex<f32>
  scf.for %i = %c0 to %n step %c1 {
    %xv = memref.load %x[%i] : memref<?xcomplex<f32>>
    %yv = memref.load %y[%i] : memref<?xcomplex<f32>>
    %p = complex.mul %alpha, %xv fastmath<reassoc,contract> : complex<f32>
    %s = complex.add %p, %yv fastmath<reassoc,contract> : complex<f32>
    memref.store %s, %y[%i] : memref<?xcomplex<f32>>
  }
  return
}

// Sliding-window sums: out[j] = sum_{k < w} x[j * step + k]. The window is a
// strided view carried from one outer iteration to the next (its offset
// advances by step): a phi of the descriptor { ptr, ptr, i64, [1 x i64],
// [1 x i64] } with the window sum as a float iter_arg of the inner loop.
func.func @window(%x: memref<?xf32>, %out: memref<?xf32>, %m: index,
                  %w: index, %step: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zf = arith.constant 0.0 : f32
  %v0 = memref.subview %x[%c0] [%w] [1] : memref<?xf32> to memref<?xf32, strided<[1], offset: ?>>
  %last = scf.for %j = %c0 to %m step %c1 iter_args(%v = %v0) -> (memref<?xf32, strided<[1], offset: ?>>) {
    %s = scf.for %k = %c0 to %w step %c1 iter_args(%acc = %zf) -> (f32) {
      %e = memref.load %v[%k] : memref<?xf32, strided<[1], offset: ?>>
      %t = arith.addf %acc, %e fastmath<reassoc,contract> : f32
      scf.yield %t : f32
    }
    memref.store %s, %out[%j] : memref<?xf32>
    %next = memref.subview %v[%step] [%w] [1] : memref<?xf32, strided<[1], offset: ?>> to memref<?xf32, strided<[1], offset: ?>>
    scf.yield %next : memref<?xf32, strided<[1], offset: ?>>
  }
  return
}
