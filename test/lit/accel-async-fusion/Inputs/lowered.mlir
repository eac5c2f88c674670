// Source of the checked-in lowered-llvm*.ll tests.
func.func @pipe(%m: memref<4xi32>) -> !async.token {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %t0, %v0 = async.execute -> !async.value<i32> {
    %x = memref.load %m[%c0] : memref<4xi32>
    async.yield %x : i32
  }
  %t1 = async.execute [%t0] (%v0 as %a : !async.value<i32>) {
    %y = arith.addi %a, %a : i32
    memref.store %y, %m[%c1] : memref<4xi32>
    async.yield
  }
  return %t1 : !async.token
}
func.func @nested(%m: memref<4xi32>) -> !async.token {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1 : i32
  %t0 = async.execute {
    %inner = async.execute {
      memref.store %one, %m[%c0] : memref<4xi32>
      async.yield
    }
    async.await %inner : !async.token
    async.yield
  }
  %t1 = async.execute [%t0] { async.yield }
  return %t1 : !async.token
}
