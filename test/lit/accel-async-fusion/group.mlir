// Tasks in a group (async.create_group / add_to_group / await_all): tiny
// ones run inline in the loop that launches them, their tokens still join the
// group (created, emplaced or errored, added, dropped as before); a task with
// a loop in its body stays a task.

// REQUIRES: mlir-tools
// RUN: %mlir-opt %mlir-async-lower %s | %mlir-translate --mlir-to-llvmir -o %t.ll
// RUN: opt %loadaccel -passes=accel-async-fusion -S %t.ll \
// RUN:   -pass-remarks=accel-async-fusion -pass-remarks-missed=accel-async-fusion 2>%t.remarks \
// RUN:   | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK --input-file=%t.remarks

// REMARK: remark: <unknown>:0:0: ran 1 task(s) inline (@async_execute_fn): body cost {{[0-9]+}} is below min-cost=1000
// REMARK: remark: <unknown>:0:0: task @async_execute_fn_0 stays asynchronous: not fused (it joins a group), not inline (its body has a loop)

// CHECK-LABEL: define void @tiny(
// CHECK: [[G:%.*]] = call ptr @mlirAsyncRuntimeCreateGroup(
// CHECK: [[T:%.*]] = call ptr @mlirAsyncRuntimeCreateToken()
// CHECK-NEXT: call void @async_execute_fn.accel.body({{.*}}, ptr [[T]])
// CHECK-NEXT: call i64 @mlirAsyncRuntimeAddTokenToGroup(ptr [[T]], ptr [[G]])
// CHECK-NEXT: call void @mlirAsyncRuntimeDropRef(ptr [[T]], i64 1)
// CHECK: call void @mlirAsyncRuntimeAwaitAllInGroup(ptr [[G]])
// CHECK-LABEL: define void @heavy(
// CHECK: call ptr @async_execute_fn_0(
// CHECK: call void @mlirAsyncRuntimeAwaitAllInGroup(

// The tiny body still sets the error of its token when it fails.
// CHECK-LABEL: define internal void @async_execute_fn.accel.body(
// CHECK: call void @mlirAsyncRuntimeEmplaceToken(ptr [[OWN:%[0-9]+]])
// CHECK: call void @mlirAsyncRuntimeSetTokenError(ptr [[OWN]])

func.func @tiny(%m: memref<64xi32>, %bad: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %g = async.create_group %c64 : !async.group
  scf.for %i = %c0 to %c64 step %c1 {
    %t = async.execute {
      %ok = arith.cmpi ne, %i, %bad : index
      cf.assert %ok, "bad element"
      %v = arith.index_cast %i : index to i32
      memref.store %v, %m[%i] : memref<64xi32>
      async.yield
    }
    %r = async.add_to_group %t, %g : !async.token
  }
  async.await_all %g
  return
}

func.func @heavy(%m: memref<64xi32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %one = arith.constant 1 : i32
  %g = async.create_group %c2 : !async.group
  %t = async.execute {
    scf.for %i = %c0 to %n step %c1 {
      memref.store %one, %m[%i] : memref<64xi32>
    }
    async.yield
  }
  %r = async.add_to_group %t, %g : !async.token
  async.await_all %g
  return
}
