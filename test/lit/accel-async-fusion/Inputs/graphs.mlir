// Task graphs shared by the execution tests. Every function takes a
// memref<16xi32> and a failure selector %fail (task K asserts %fail != K) and
// returns what the caller awaits: a token, a value or a group.

// A chain of three tasks: 0 -> 1 -> 2.
func.func @chain3(%m: memref<16xi32>, %fail: i32) -> !async.token {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %one = arith.constant 1 : i32
  %two = arith.constant 2 : i32
  %t0 = async.execute {
    memref.store %one, %m[%c0] : memref<16xi32>
    async.yield
  }
  %t1 = async.execute [%t0] {
    %ok = arith.cmpi ne, %fail, %one : i32
    cf.assert %ok, "task 1 failed"
    %x = memref.load %m[%c0] : memref<16xi32>
    %y = arith.addi %x, %one : i32
    memref.store %y, %m[%c1] : memref<16xi32>
    async.yield
  }
  %t2 = async.execute [%t1] {
    %ok = arith.cmpi ne, %fail, %two : i32
    cf.assert %ok, "task 2 failed"
    %x = memref.load %m[%c1] : memref<16xi32>
    %y = arith.addi %x, %one : i32
    memref.store %y, %m[%c2] : memref<16xi32>
    async.yield
  }
  return %t2 : !async.token
}

// A diamond: 0 -> {1, 2} -> 3.
func.func @diamond(%m: memref<16xi32>, %fail: i32) -> !async.token {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %one = arith.constant 1 : i32
  %two = arith.constant 2 : i32
  %t0 = async.execute {
    memref.store %two, %m[%c0] : memref<16xi32>
    async.yield
  }
  %t1 = async.execute [%t0] {
    %ok = arith.cmpi ne, %fail, %one : i32
    cf.assert %ok, "task 1 failed"
    %x = memref.load %m[%c0] : memref<16xi32>
    %y = arith.addi %x, %one : i32
    memref.store %y, %m[%c1] : memref<16xi32>
    async.yield
  }
  %t2 = async.execute [%t0] {
    %ok = arith.cmpi ne, %fail, %two : i32
    cf.assert %ok, "task 2 failed"
    %x = memref.load %m[%c0] : memref<16xi32>
    %y = arith.muli %x, %two : i32
    memref.store %y, %m[%c2] : memref<16xi32>
    async.yield
  }
  %t3 = async.execute [%t1, %t2] {
    %x = memref.load %m[%c1] : memref<16xi32>
    %y = memref.load %m[%c2] : memref<16xi32>
    %z = arith.addi %x, %y : i32
    memref.store %z, %m[%c3] : memref<16xi32>
    async.yield
  }
  return %t3 : !async.token
}

// A task producing an !async.value consumed by the next one.
func.func @value(%m: memref<16xi32>, %fail: i32) -> !async.token {
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %one = arith.constant 1 : i32
  %two = arith.constant 2 : i32
  %seven = arith.constant 7 : i32
  %t0, %v0 = async.execute -> !async.value<i32> {
    %ok = arith.cmpi ne, %fail, %one : i32
    cf.assert %ok, "task 1 failed"
    memref.store %seven, %m[%c4] : memref<16xi32>
    async.yield %seven : i32
  }
  %t1 = async.execute [%t0] (%v0 as %a : !async.value<i32>) {
    %ok = arith.cmpi ne, %fail, %two : i32
    cf.assert %ok, "task 2 failed"
    %y = arith.muli %a, %a : i32
    memref.store %y, %m[%c5] : memref<16xi32>
    async.yield
  }
  return %t1 : !async.token
}

// Eight independent tiny tasks in a group; task K fails when %fail == K.
func.func @group(%m: memref<16xi32>, %fail: i32) -> !async.group {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %g = async.create_group %c8 : !async.group
  scf.for %i = %c0 to %c8 step %c1 {
    %t = async.execute {
      %ii = arith.index_cast %i : index to i32
      %ok = arith.cmpi ne, %fail, %ii : i32
      cf.assert %ok, "group task failed"
      %k = arith.addi %i, %c8 : index
      memref.store %ii, %m[%k] : memref<16xi32>
      async.yield
    }
    %r = async.add_to_group %t, %g : !async.token
  }
  return %g : !async.group
}

// Fan-out with real work: two tasks sum 2^20 numbers each, in parallel.
func.func @work(%m: memref<16xi32>, %fail: i32) -> !async.token {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c7 = arith.constant 7 : index
  %n = arith.constant 1048576 : index
  %one = arith.constant 1 : i32
  %t0 = async.execute {
    memref.store %one, %m[%c0] : memref<16xi32>
    async.yield
  }
  %t1 = async.execute [%t0] {
    %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %one) -> i32 {
      %ii = arith.index_cast %i : index to i32
      %a = arith.addi %acc, %ii : i32
      %b = arith.xori %a, %one : i32
      scf.yield %b : i32
    }
    memref.store %s, %m[%c6] : memref<16xi32>
    async.yield
  }
  %t2 = async.execute [%t0] {
    %ok = arith.cmpi ne, %fail, %one : i32
    cf.assert %ok, "task 2 failed"
    %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %one) -> i32 {
      %ii = arith.index_cast %i : index to i32
      %a = arith.xori %acc, %ii : i32
      %b = arith.addi %a, %ii : i32
      scf.yield %b : i32
    }
    memref.store %s, %m[%c7] : memref<16xi32>
    async.yield
  }
  %t3 = async.execute [%t1, %t2] { async.yield }
  return %t3 : !async.token
}

// A loop whose iterations each launch a chain of two tasks and wait for it.
func.func @loop(%m: memref<16xi32>, %fail: i32) -> !async.token {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c10 = arith.constant 10 : index
  %one = arith.constant 1 : i32
  scf.for %i = %c0 to %c10 step %c1 {
    %a = async.execute {
      %x = memref.load %m[%c3] : memref<16xi32>
      %y = arith.addi %x, %one : i32
      memref.store %y, %m[%c3] : memref<16xi32>
      async.yield
    }
    %b = async.execute [%a] {
      %x = memref.load %m[%c3] : memref<16xi32>
      %z = arith.addi %x, %x : i32
      memref.store %z, %m[%c3] : memref<16xi32>
      async.yield
    }
    async.await %b : !async.token
  }
  %t = async.execute { async.yield }
  return %t : !async.token
}

// Fan-out into a chain whose head waits for a shared token: 0 -> {1, 2 -> 3}.
// The chain 2 -> 3 keeps task 2's wait for task 0 inside the fused task.
func.func @fanchain(%m: memref<16xi32>, %fail: i32) -> !async.token {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %one = arith.constant 1 : i32
  %two = arith.constant 2 : i32
  %three = arith.constant 3 : i32
  %five = arith.constant 5 : i32
  %t0 = async.execute {
    memref.store %five, %m[%c0] : memref<16xi32>
    async.yield
  }
  %t1 = async.execute [%t0] {
    %ok = arith.cmpi ne, %fail, %one : i32
    cf.assert %ok, "task 1 failed"
    %x = memref.load %m[%c0] : memref<16xi32>
    memref.store %x, %m[%c1] : memref<16xi32>
    async.yield
  }
  %t2 = async.execute [%t0] {
    %ok = arith.cmpi ne, %fail, %two : i32
    cf.assert %ok, "task 2 failed"
    %x = memref.load %m[%c0] : memref<16xi32>
    %y = arith.muli %x, %three : i32
    memref.store %y, %m[%c2] : memref<16xi32>
    async.yield
  }
  %t3 = async.execute [%t2] {
    %ok = arith.cmpi ne, %fail, %three : i32
    cf.assert %ok, "task 3 failed"
    %x = memref.load %m[%c2] : memref<16xi32>
    %y = arith.addi %x, %one : i32
    memref.store %y, %m[%c3] : memref<16xi32>
    async.yield
  }
  async.await %t1 : !async.token
  return %t3 : !async.token
}
