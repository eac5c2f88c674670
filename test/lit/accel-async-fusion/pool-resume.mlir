// Fan-out after a wait: MLIR's async runtime resumes every task waiting for
// an operand on the thread that makes the operand available, one after the
// other (the awaiters run inline in mlirAsyncRuntimeEmplaceToken). Two tasks
// with real work that wait for one token therefore run in turn, not in
// parallel. The pass gives each of them a second hop to the thread pool right
// after its wait. A single waiter with real work, or a waiter whose body is
// cheap, keeps running inline.

// REQUIRES: mlir-tools
// RUN: %mlir-opt %mlir-async-lower %s | %mlir-translate --mlir-to-llvmir -o %t.ll
// RUN: opt %loadaccel -passes=accel-async-fusion -S %t.ll \
// RUN:   -pass-remarks=accel-async-fusion 2>%t.remarks | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK --input-file=%t.remarks
// RUN: opt %loadaccel -passes='accel-async-fusion<no-pool-resume>' -S %t.ll \
// RUN:   | FileCheck %s --check-prefix=OFF

// REMARK: remark: <unknown>:0:0: task @async_execute_fn_0 resumes on the thread pool after its last wait: 2 tasks with real work wait for one operand, and the runtime would run them one after the other on the thread that makes it available (its body has a loop)
// REMARK-NEXT: remark: <unknown>:0:0: task @async_execute_fn_1 resumes on the thread pool after its last wait: 2 tasks with real work wait for one operand
// REMARK-NOT: resumes on the thread pool

// The first waiter: its own hop to the pool, the wait for the head's token,
// then (new) a second hop to the pool before its body.
// CHECK-LABEL: define ptr @async_execute_fn_0(
// CHECK: call void @mlirAsyncRuntimeExecute(ptr [[HDL:%.*]], ptr @__resume)
// CHECK: call void @mlirAsyncRuntimeAwaitTokenAndExecute(ptr %0, ptr [[HDL]], ptr @__resume)
// CHECK: switch i32 {{%.*}}, label %[[SUSPEND:.*]] [
// CHECK-NEXT: i32 0, label %[[RESUMED:.*]]
// CHECK-NEXT: i32 1, label %[[CLEANUP:.*]]
// CHECK: [[RESUMED]]:
// CHECK-NEXT: [[SAVE:%.*]] = call token @llvm.coro.save(ptr [[HDL]])
// CHECK-NEXT: call void @mlirAsyncRuntimeExecute(ptr [[HDL]], ptr @__resume)
// CHECK-NEXT: [[S:%.*]] = call i8 @llvm.coro.suspend(token [[SAVE]], i1 false)
// CHECK-NEXT: [[X:%.*]] = sext i8 [[S]] to i32
// CHECK-NEXT: switch i32 [[X]], label %[[SUSPEND]] [
// CHECK-NEXT: i32 0, label %[[BODY:.*]]
// CHECK-NEXT: i32 1, label %[[CLEANUP]]
// CHECK: [[BODY]]:
// CHECK-NEXT: call i1 @mlirAsyncRuntimeIsTokenError(ptr %0)
// CHECK-LABEL: define ptr @async_execute_fn_1(
// CHECK: call void @mlirAsyncRuntimeAwaitTokenAndExecute(
// CHECK: .pool:
// The fan-in task and the tasks of @one_heavy_waiter keep one hop.
// CHECK-LABEL: define ptr @async_execute_fn_2(
// CHECK-NOT: .pool:
// CHECK-LABEL: define ptr @async_execute_fn_3(
// CHECK-NOT: .pool:

// OFF-NOT: .pool:

func.func @fanout(%m: memref<4xi64>) -> !async.token {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %n = arith.constant 1048576 : index
  %mul = arith.constant 6364136223846793005 : i64
  // A head with real work: it stays a task, both branches wait for it.
  %t0 = async.execute {
    %x = memref.load %m[%c0] : memref<4xi64>
    %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %x) -> i64 {
      %ii = arith.index_cast %i : index to i64
      %a = arith.muli %acc, %mul : i64
      %b = arith.addi %a, %ii : i64
      scf.yield %b : i64
    }
    memref.store %s, %m[%c0] : memref<4xi64>
    async.yield
  }
  %t1 = async.execute [%t0] {
    %x = memref.load %m[%c0] : memref<4xi64>
    %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %x) -> i64 {
      %ii = arith.index_cast %i : index to i64
      %a = arith.muli %acc, %mul : i64
      %b = arith.xori %a, %ii : i64
      scf.yield %b : i64
    }
    memref.store %s, %m[%c1] : memref<4xi64>
    async.yield
  }
  %t2 = async.execute [%t0] {
    %x = memref.load %m[%c0] : memref<4xi64>
    %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %x) -> i64 {
      %ii = arith.index_cast %i : index to i64
      %a = arith.xori %acc, %mul : i64
      %b = arith.addi %a, %ii : i64
      scf.yield %b : i64
    }
    memref.store %s, %m[%c2] : memref<4xi64>
    async.yield
  }
  // A cheap fan-in: resumed inline, as before.
  %t3 = async.execute [%t1, %t2] {
    %x = memref.load %m[%c1] : memref<4xi64>
    %y = memref.load %m[%c2] : memref<4xi64>
    %z = arith.addi %x, %y : i64
    memref.store %z, %m[%c0] : memref<4xi64>
    async.yield
  }
  return %t3 : !async.token
}

// One waiter with real work and a cheap one: nothing runs in turn that could
// run in parallel, both resume inline.
func.func @one_heavy_waiter(%m: memref<4xi64>) -> !async.group {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %n = arith.constant 1048576 : index
  %mul = arith.constant 6364136223846793005 : i64
  %g = async.create_group %c3 : !async.group
  %t0 = async.execute {
    %x = memref.load %m[%c0] : memref<4xi64>
    %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %x) -> i64 {
      %ii = arith.index_cast %i : index to i64
      %a = arith.muli %acc, %mul : i64
      scf.yield %a : i64
    }
    memref.store %s, %m[%c0] : memref<4xi64>
    async.yield
  }
  %t1 = async.execute [%t0] {
    %x = memref.load %m[%c0] : memref<4xi64>
    %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %x) -> i64 {
      %ii = arith.index_cast %i : index to i64
      %a = arith.addi %acc, %ii : i64
      scf.yield %a : i64
    }
    memref.store %s, %m[%c1] : memref<4xi64>
    async.yield
  }
  %t2 = async.execute [%t0] {
    %one = arith.constant 1 : i64
    memref.store %one, %m[%c3] : memref<4xi64>
    async.yield
  }
  %r1 = async.add_to_group %t1, %g : !async.token
  %r2 = async.add_to_group %t2, %g : !async.token
  return %g : !async.group
}
