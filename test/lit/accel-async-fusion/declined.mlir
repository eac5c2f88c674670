// What stays asynchronous, each with its reason: fan-out (a token with two
// users), fan-in (a task waiting for two tasks), tasks with real work (a
// loop), a task the caller awaits, a launch after a blocking await, and the
// parameters that switch each rule off.

// REQUIRES: mlir-tools
// RUN: %mlir-opt %mlir-async-lower %s | %mlir-translate --mlir-to-llvmir -o %t.ll
// RUN: opt %loadaccel -passes=accel-async-fusion -disable-output %t.ll \
// RUN:   -pass-remarks-missed=accel-async-fusion 2>&1 | FileCheck %s
// RUN: opt %loadaccel -passes='accel-async-fusion<no-chains;no-inline-small>' -disable-output %t.ll \
// RUN:   -pass-remarks-missed=accel-async-fusion 2>&1 | FileCheck %s --check-prefix=OFF
// RUN: opt %loadaccel -passes='accel-async-fusion<no-inline-small>' -disable-output %t.ll \
// RUN:   -pass-remarks-missed=accel-async-fusion 2>&1 | FileCheck %s --check-prefix=NOINLINE
// RUN: opt %loadaccel -passes='accel-async-fusion<no-chains>' -S %t.ll \
// RUN:   -pass-remarks-missed=accel-async-fusion 2>%t.nochains | FileCheck %s --check-prefix=NOCHAINS-IR
// RUN: FileCheck %s --check-prefix=NOCHAINS --input-file=%t.nochains

// @fan: t0 (@async_execute_fn) runs inline (cheap, independent); t1, t2
// (fn_0, fn_1) share its token and fn_2 waits for both.
// CHECK: remark: <unknown>:0:0: task @async_execute_fn_0 stays asynchronous: not fused (its successor @async_execute_fn_2 waits for 2 operands, not all from this task (fan-in)), not inline (it waits for 1 operand(s))
// CHECK: remark: <unknown>:0:0: task @async_execute_fn_1 stays asynchronous: not fused (its successor @async_execute_fn_2 waits for 2 operands, not all from this task (fan-in)), not inline (it waits for 1 operand(s))
// CHECK: remark: <unknown>:0:0: task @async_execute_fn_2 stays asynchronous: not fused (its results are returned to the caller's caller), not inline (it waits for 2 operand(s))
// @work: a loop in the body.
// CHECK: remark: <unknown>:0:0: task @async_execute_fn_3 stays asynchronous: not fused (the caller awaits it), not inline (its body has a loop)
// @blocked: the caller waits for another token between t0 and t1 (the
// await's error check splits the block).
// CHECK: remark: <unknown>:0:0: task @async_execute_fn_4 stays asynchronous: not fused (its successor is launched in another block), not inline (its body calls @ext)
// CHECK: remark: <unknown>:0:0: task @async_execute_fn_5 stays asynchronous: not fused (its results are returned to the caller's caller), not inline (it waits for 1 operand(s))

// @between: the caller calls unknown code between the launches of t0 and t1.
// NOINLINE: remark: <unknown>:0:0: task @async_execute_fn_6 stays asynchronous: not fused (the caller blocks or calls other code before launching its successor), not inline (inline-small is off)

// OFF: remark: <unknown>:0:0: task @async_execute_fn stays asynchronous: not fused (chains is off), not inline (inline-small is off)
// NOCHAINS: remark: <unknown>:0:0: task @async_execute_fn_0 stays asynchronous: not fused (chains is off), not inline (it waits for 1 operand(s))

// With no-chains the cheap independent head of @fan still runs inline.
// NOCHAINS-IR-LABEL: define ptr @fan(
// NOCHAINS-IR: call void @async_execute_fn.accel.body(
// NOCHAINS-IR: call ptr @async_execute_fn_0(
// NOCHAINS-IR: call ptr @async_execute_fn_1(

func.func private @ext() -> ()

func.func @fan(%m: memref<16xi32>) -> !async.token {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %one = arith.constant 1 : i32
  %t0 = async.execute {
    memref.store %one, %m[%c0] : memref<16xi32>
    async.yield
  }
  %t1 = async.execute [%t0] {
    memref.store %one, %m[%c1] : memref<16xi32>
    async.yield
  }
  %t2 = async.execute [%t0] {
    memref.store %one, %m[%c2] : memref<16xi32>
    async.yield
  }
  %t3 = async.execute [%t1, %t2] { async.yield }
  return %t3 : !async.token
}

func.func @work(%m: memref<16xi32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1 : i32
  %t = async.execute {
    scf.for %i = %c0 to %n step %c1 {
      memref.store %one, %m[%i] : memref<16xi32>
    }
    async.yield
  }
  async.await %t : !async.token
  return
}

func.func @blocked(%m: memref<16xi32>, %other: !async.token) -> !async.token {
  %t0 = async.execute {
    func.call @ext() : () -> ()
    async.yield
  }
  async.await %other : !async.token
  %t1 = async.execute [%t0] { async.yield }
  return %t1 : !async.token
}

func.func @between(%m: memref<16xi32>) -> !async.token {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1 : i32
  %t0 = async.execute {
    memref.store %one, %m[%c0] : memref<16xi32>
    async.yield
  }
  func.call @ext() : () -> ()
  %t1 = async.execute [%t0] { async.yield }
  return %t1 : !async.token
}
