// A chain of three tasks, each waiting only for its predecessor, whose
// tokens nobody else awaits. With min-cost=0 nothing runs inline: the chain
// becomes one task with one token (a copy of the first task's coroutine that
// creates the last task's token up front, returns it, and runs the other two
// bodies where the first body ends; the intermediate tokens become private
// error flags). By default the bodies are cheap and the whole chain runs
// inline in the caller.

// REQUIRES: mlir-tools
// RUN: %mlir-opt %mlir-async-lower %s | %mlir-translate --mlir-to-llvmir -o %t.ll
// RUN: opt %loadaccel -passes='accel-async-fusion<min-cost=0>' -S %t.ll \
// RUN:   -pass-remarks=accel-async-fusion 2>%t.fuse.remarks | FileCheck %s --check-prefix=FUSE
// RUN: FileCheck %s --check-prefix=FUSE-REMARK --input-file=%t.fuse.remarks
// RUN: opt %loadaccel -passes=accel-async-fusion -S %t.ll \
// RUN:   -pass-remarks=accel-async-fusion 2>%t.inline.remarks | FileCheck %s --check-prefix=INLINE
// RUN: FileCheck %s --check-prefix=INLINE-REMARK --input-file=%t.inline.remarks
// The result is valid IR that the coroutine passes lower.
// RUN: opt %loadaccel -passes='accel-async-fusion<min-cost=0>,default<O2>' -llvmaccel-auto=none \
// RUN:   -disable-output %t.ll

// FUSE-REMARK: remark: <unknown>:0:0: fused a chain of 3 tasks (@async_execute_fn .. @async_execute_fn_1) into one task; not inline: body cost {{[0-9]+}} is not below min-cost=0
// INLINE-REMARK: remark: <unknown>:0:0: ran 3 task(s) inline (@async_execute_fn): body cost {{[0-9]+}} is below min-cost=1000

// FUSE-LABEL: define ptr @chain3(
// FUSE-NOT: call ptr @async_execute_fn
// FUSE: [[T:%.*]] = call ptr @async_execute_fn.accel.chain(
// FUSE-NOT: call ptr @async_execute_fn
// FUSE: ret ptr [[T]]

// The fused task: one token (the last task's, returned), the other two are
// flags; the later bodies run where the first body ends.
// FUSE-LABEL: define internal ptr @async_execute_fn.accel.chain(
// FUSE-DAG: [[F1:%.*]] = alloca i8
// FUSE-DAG: [[F0:%.*]] = alloca i8
// FUSE: [[LAST:%.*]] = call ptr @mlirAsyncRuntimeCreateToken()
// FUSE-NOT: @mlirAsyncRuntimeCreateToken
// FUSE: store i8 0, ptr [[F0]]
// FUSE: call void @mlirAsyncRuntimeExecute(
// FUSE-NOT: @mlirAsyncRuntimeExecute
// FUSE: br label %accel.chain
// FUSE: accel.chain:
// FUSE-NEXT: store i8 0, ptr [[F1]]
// FUSE-NEXT: call void @async_execute_fn_0.accel.body.local(ptr [[F0]], {{.*}}, ptr [[F1]])
// FUSE-NEXT: call void @async_execute_fn_1.accel.body.local(ptr [[F1]], {{.*}}, ptr [[LAST]])
// FUSE: ret ptr [[LAST]]

// The body of the middle task: its await is gone, its error check stays,
// on a private flag (the token of a task only its successor sees needs no
// runtime object).
// FUSE-LABEL: define internal void @async_execute_fn_0.accel.body.local(ptr %0,
// FUSE-NOT: coro
// FUSE-NOT: AndExecute
// FUSE-NOT: mlirAsyncRuntime
// FUSE: [[E:%.*]] = load i8, ptr %0
// FUSE-NEXT: icmp ne i8 [[E]], 0
// FUSE-NOT: mlirAsyncRuntime
// FUSE: store i8 1, ptr %7
// FUSE-NOT: mlirAsyncRuntime
// FUSE: ret void

// INLINE-LABEL: define ptr @chain3(
// INLINE-DAG: [[F1:%.*]] = alloca i8
// INLINE-DAG: [[F0:%.*]] = alloca i8
// INLINE-NOT: call ptr @async_execute_fn
// INLINE: [[LAST:%.*]] = call ptr @mlirAsyncRuntimeCreateToken()
// INLINE-NEXT: store i8 0, ptr [[F0]]
// INLINE-NEXT: call void @async_execute_fn.accel.body.local({{.*}}, ptr [[F0]])
// INLINE-NEXT: store i8 0, ptr [[F1]]
// INLINE-NEXT: call void @async_execute_fn_0.accel.body.local(ptr [[F0]], {{.*}}, ptr [[F1]])
// INLINE-NEXT: call void @async_execute_fn_1.accel.body.local(ptr [[F1]], {{.*}}, ptr [[LAST]])
// INLINE-NEXT: ret ptr [[LAST]]

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
