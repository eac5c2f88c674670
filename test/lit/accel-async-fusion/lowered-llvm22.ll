; Checked-in IR lowered from Inputs/lowered.mlir by
; mlir-opt-22 / mlir-translate-22 (LLVM 22's llvm.coro.end returns void) with the lowering of lit's %mlir-async-lower:
; @pipe is a chain whose first task yields an !async.value the second one
; reads: fused into one task, the first token becomes a private flag, the
; value stays a runtime value (created, emplaced, read and dropped as before).
; @nested launches a task inside a task and awaits it there: both stay tasks.

; REQUIRES: llvm-ge-22
; RUN: opt %loadaccel -passes='accel-async-fusion<min-cost=0>' -S %s \
; RUN:   -pass-remarks=accel-async-fusion -pass-remarks-missed=accel-async-fusion 2>%t.remarks | FileCheck %s
; RUN: FileCheck %s --check-prefix=REMARK --input-file=%t.remarks

; REMARK: fused a chain of 2 tasks (@async_execute_fn .. @async_execute_fn_0) into one task
; REMARK: task @async_execute_fn_2 stays asynchronous: not fused (it awaits a token created in its own body)
; REMARK: task @async_execute_fn_3 stays asynchronous: not fused (its results are returned to the caller's caller)
; REMARK: task @async_execute_fn_1 stays asynchronous: not fused (the task that launched it awaits it)

; CHECK-LABEL: define ptr @pipe(
; CHECK: [[T:%.*]] = call ptr @async_execute_fn.accel.chain(
; CHECK-NEXT: ret ptr [[T]]
; CHECK-LABEL: define ptr @nested(
; CHECK: call ptr @async_execute_fn_2(
; CHECK: call ptr @async_execute_fn_3(
; CHECK-LABEL: define internal ptr @async_execute_fn.accel.chain(
; CHECK: [[FLAG:%.*]] = alloca i8
; CHECK: [[TOK:%.*]] = call ptr @mlirAsyncRuntimeCreateToken()
; CHECK-NOT: @mlirAsyncRuntimeCreateToken
; CHECK: [[VAL:%.*]] = call ptr @mlirAsyncRuntimeCreateValue(i64 {{.*}})
; CHECK: call void @mlirAsyncRuntimeEmplaceValue(ptr [[VAL]])
; CHECK-NEXT: br label %accel.chain
; CHECK: call void @async_execute_fn_0.accel.body.local(ptr [[FLAG]], ptr [[VAL]], {{.*}}, ptr [[TOK]])
; CHECK: ret ptr [[TOK]]
; CHECK-LABEL: define internal void @async_execute_fn_0.accel.body.local(
; CHECK: load i8, ptr %0
; CHECK: call i1 @mlirAsyncRuntimeIsValueError(ptr %1)
; CHECK: call ptr @mlirAsyncRuntimeGetValueStorage(ptr %1)
; CHECK: call void @mlirAsyncRuntimeDropRef(ptr %1, i64 1)
; CHECK: call void @mlirAsyncRuntimeEmplaceToken(ptr %7)

; ModuleID = 'LLVMDialectModule'
source_filename = "LLVMDialectModule"

declare void @free(ptr)

declare ptr @aligned_alloc(i64, i64)

define ptr @pipe(ptr %0, ptr %1, i64 %2, i64 %3, i64 %4) {
  %6 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } poison, ptr %0, 0
  %7 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %6, ptr %1, 1
  %8 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %7, i64 %2, 2
  %9 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %8, i64 %3, 3, 0
  %10 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %9, i64 %4, 4, 0
  %11 = extractvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %10, 0
  %12 = extractvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %10, 1
  %13 = extractvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %10, 2
  %14 = extractvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %10, 3, 0
  %15 = extractvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %10, 4, 0
  %16 = call { ptr, ptr } @async_execute_fn(ptr %11, ptr %12, i64 %13, i64 %14, i64 %15)
  %17 = extractvalue { ptr, ptr } %16, 0
  %18 = extractvalue { ptr, ptr } %16, 1
  %19 = extractvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %10, 0
  %20 = extractvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %10, 1
  %21 = extractvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %10, 2
  %22 = extractvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %10, 3, 0
  %23 = extractvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %10, 4, 0
  %24 = call ptr @async_execute_fn_0(ptr %17, ptr %18, ptr %19, ptr %20, i64 %21, i64 %22, i64 %23)
  ret ptr %24
}

define ptr @nested(ptr %0, ptr %1, i64 %2, i64 %3, i64 %4) {
  %6 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } poison, ptr %0, 0
  %7 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %6, ptr %1, 1
  %8 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %7, i64 %2, 2
  %9 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %8, i64 %3, 3, 0
  %10 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %9, i64 %4, 4, 0
  %11 = extractvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %10, 0
  %12 = extractvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %10, 1
  %13 = extractvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %10, 2
  %14 = extractvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %10, 3, 0
  %15 = extractvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %10, 4, 0
  %16 = call ptr @async_execute_fn_2(ptr %11, ptr %12, i64 %13, i64 %14, i64 %15)
  %17 = call ptr @async_execute_fn_3(ptr %16)
  ret ptr %17
}

; Function Attrs: presplitcoroutine
define { ptr, ptr } @async_execute_fn(ptr %0, ptr %1, i64 %2, i64 %3, i64 %4) #0 {
  %6 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } poison, ptr %0, 0
  %7 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %6, ptr %1, 1
  %8 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %7, i64 %2, 2
  %9 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %8, i64 %3, 3, 0
  %10 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %9, i64 %4, 4, 0
  %11 = call ptr @mlirAsyncRuntimeCreateToken()
  %12 = call ptr @mlirAsyncRuntimeCreateValue(i64 4)
  %13 = call token @llvm.coro.id(i32 0, ptr null, ptr null, ptr null)
  %14 = call i64 @llvm.coro.size.i64()
  %15 = call i64 @llvm.coro.align.i64()
  %16 = add i64 %14, %15
  %17 = sub i64 %16, 1
  %18 = sub i64 0, %15
  %19 = and i64 %17, %18
  %20 = call ptr @aligned_alloc(i64 %15, i64 %19)
  %21 = call ptr @llvm.coro.begin(token %13, ptr %20)
  %22 = call token @llvm.coro.save(ptr %21)
  call void @mlirAsyncRuntimeExecute(ptr %21, ptr @__resume)
  %23 = call i8 @llvm.coro.suspend(token %22, i1 false)
  %24 = sext i8 %23 to i32
  switch i32 %24, label %32 [
    i32 0, label %25
    i32 1, label %30
  ]

25:                                               ; preds = %5
  %26 = extractvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %10, 1
  %27 = getelementptr inbounds nuw i32, ptr %26, i64 0
  %28 = load i32, ptr %27, align 4
  %29 = call ptr @mlirAsyncRuntimeGetValueStorage(ptr %12)
  store i32 %28, ptr %29, align 4
  call void @mlirAsyncRuntimeEmplaceValue(ptr %12)
  call void @mlirAsyncRuntimeEmplaceToken(ptr %11)
  br label %30

30:                                               ; preds = %25, %5
  %31 = call ptr @llvm.coro.free(token %13, ptr %21)
  call void @free(ptr %31)
  br label %32

32:                                               ; preds = %30, %5
  call void @llvm.coro.end(ptr %21, i1 false, token none)
  %33 = insertvalue { ptr, ptr } poison, ptr %11, 0
  %34 = insertvalue { ptr, ptr } %33, ptr %12, 1
  ret { ptr, ptr } %34
}

; Function Attrs: presplitcoroutine
define ptr @async_execute_fn_0(ptr %0, ptr %1, ptr %2, ptr %3, i64 %4, i64 %5, i64 %6) #0 {
  %8 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } poison, ptr %2, 0
  %9 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %8, ptr %3, 1
  %10 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %9, i64 %4, 2
  %11 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %10, i64 %5, 3, 0
  %12 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %11, i64 %6, 4, 0
  %13 = call ptr @mlirAsyncRuntimeCreateToken()
  %14 = call token @llvm.coro.id(i32 0, ptr null, ptr null, ptr null)
  %15 = call i64 @llvm.coro.size.i64()
  %16 = call i64 @llvm.coro.align.i64()
  %17 = add i64 %15, %16
  %18 = sub i64 %17, 1
  %19 = sub i64 0, %16
  %20 = and i64 %18, %19
  %21 = call ptr @aligned_alloc(i64 %16, i64 %20)
  %22 = call ptr @llvm.coro.begin(token %14, ptr %21)
  %23 = call token @llvm.coro.save(ptr %22)
  call void @mlirAsyncRuntimeExecute(ptr %22, ptr @__resume)
  %24 = call i8 @llvm.coro.suspend(token %23, i1 false)
  %25 = sext i8 %24 to i32
  switch i32 %25, label %48 [
    i32 0, label %26
    i32 1, label %46
  ]

26:                                               ; preds = %7
  %27 = call token @llvm.coro.save(ptr %22)
  call void @mlirAsyncRuntimeAwaitTokenAndExecute(ptr %0, ptr %22, ptr @__resume)
  %28 = call i8 @llvm.coro.suspend(token %27, i1 false)
  %29 = sext i8 %28 to i32
  switch i32 %29, label %48 [
    i32 0, label %30
    i32 1, label %46
  ]

30:                                               ; preds = %26
  %31 = call i1 @mlirAsyncRuntimeIsTokenError(ptr %0)
  call void @mlirAsyncRuntimeDropRef(ptr %0, i64 1)
  br i1 %31, label %44, label %32

32:                                               ; preds = %30
  %33 = call token @llvm.coro.save(ptr %22)
  call void @mlirAsyncRuntimeAwaitValueAndExecute(ptr %1, ptr %22, ptr @__resume)
  %34 = call i8 @llvm.coro.suspend(token %33, i1 false)
  %35 = sext i8 %34 to i32
  switch i32 %35, label %48 [
    i32 0, label %36
    i32 1, label %46
  ]

36:                                               ; preds = %32
  %37 = call i1 @mlirAsyncRuntimeIsValueError(ptr %1)
  br i1 %37, label %44, label %38

38:                                               ; preds = %36
  %39 = call ptr @mlirAsyncRuntimeGetValueStorage(ptr %1)
  %40 = load i32, ptr %39, align 4
  call void @mlirAsyncRuntimeDropRef(ptr %1, i64 1)
  %41 = add i32 %40, %40
  %42 = extractvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %12, 1
  %43 = getelementptr inbounds nuw i32, ptr %42, i64 1
  store i32 %41, ptr %43, align 4
  call void @mlirAsyncRuntimeEmplaceToken(ptr %13)
  br label %46

44:                                               ; preds = %36, %30
  call void @mlirAsyncRuntimeDropRef(ptr %13, i64 1)
  call void @mlirAsyncRuntimeDropRef(ptr %1, i64 1)
  br label %45

45:                                               ; preds = %44
  call void @mlirAsyncRuntimeSetTokenError(ptr %13)
  br label %46

46:                                               ; preds = %45, %38, %32, %26, %7
  %47 = call ptr @llvm.coro.free(token %14, ptr %22)
  call void @free(ptr %47)
  br label %48

48:                                               ; preds = %46, %32, %26, %7
  call void @llvm.coro.end(ptr %22, i1 false, token none)
  ret ptr %13
}

; Function Attrs: presplitcoroutine
define ptr @async_execute_fn_1(ptr %0, ptr %1, i64 %2, i64 %3, i64 %4) #0 {
  %6 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } poison, ptr %0, 0
  %7 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %6, ptr %1, 1
  %8 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %7, i64 %2, 2
  %9 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %8, i64 %3, 3, 0
  %10 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %9, i64 %4, 4, 0
  %11 = call ptr @mlirAsyncRuntimeCreateToken()
  %12 = call token @llvm.coro.id(i32 0, ptr null, ptr null, ptr null)
  %13 = call i64 @llvm.coro.size.i64()
  %14 = call i64 @llvm.coro.align.i64()
  %15 = add i64 %13, %14
  %16 = sub i64 %15, 1
  %17 = sub i64 0, %14
  %18 = and i64 %16, %17
  %19 = call ptr @aligned_alloc(i64 %14, i64 %18)
  %20 = call ptr @llvm.coro.begin(token %12, ptr %19)
  %21 = call token @llvm.coro.save(ptr %20)
  call void @mlirAsyncRuntimeExecute(ptr %20, ptr @__resume)
  %22 = call i8 @llvm.coro.suspend(token %21, i1 false)
  %23 = sext i8 %22 to i32
  switch i32 %23, label %29 [
    i32 0, label %24
    i32 1, label %27
  ]

24:                                               ; preds = %5
  %25 = extractvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %10, 1
  %26 = getelementptr inbounds nuw i32, ptr %25, i64 0
  store i32 1, ptr %26, align 4
  call void @mlirAsyncRuntimeEmplaceToken(ptr %11)
  br label %27

27:                                               ; preds = %24, %5
  %28 = call ptr @llvm.coro.free(token %12, ptr %20)
  call void @free(ptr %28)
  br label %29

29:                                               ; preds = %27, %5
  call void @llvm.coro.end(ptr %20, i1 false, token none)
  ret ptr %11
}

; Function Attrs: presplitcoroutine
define ptr @async_execute_fn_2(ptr %0, ptr %1, i64 %2, i64 %3, i64 %4) #0 {
  %6 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } poison, ptr %0, 0
  %7 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %6, ptr %1, 1
  %8 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %7, i64 %2, 2
  %9 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %8, i64 %3, 3, 0
  %10 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %9, i64 %4, 4, 0
  %11 = call ptr @mlirAsyncRuntimeCreateToken()
  %12 = call token @llvm.coro.id(i32 0, ptr null, ptr null, ptr null)
  %13 = call i64 @llvm.coro.size.i64()
  %14 = call i64 @llvm.coro.align.i64()
  %15 = add i64 %13, %14
  %16 = sub i64 %15, 1
  %17 = sub i64 0, %14
  %18 = and i64 %16, %17
  %19 = call ptr @aligned_alloc(i64 %14, i64 %18)
  %20 = call ptr @llvm.coro.begin(token %12, ptr %19)
  %21 = call token @llvm.coro.save(ptr %20)
  call void @mlirAsyncRuntimeExecute(ptr %20, ptr @__resume)
  %22 = call i8 @llvm.coro.suspend(token %21, i1 false)
  %23 = sext i8 %22 to i32
  switch i32 %23, label %40 [
    i32 0, label %24
    i32 1, label %38
  ]

24:                                               ; preds = %5
  %25 = extractvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %10, 0
  %26 = extractvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %10, 1
  %27 = extractvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %10, 2
  %28 = extractvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %10, 3, 0
  %29 = extractvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %10, 4, 0
  %30 = call ptr @async_execute_fn_1(ptr %25, ptr %26, i64 %27, i64 %28, i64 %29)
  %31 = call token @llvm.coro.save(ptr %20)
  call void @mlirAsyncRuntimeAwaitTokenAndExecute(ptr %30, ptr %20, ptr @__resume)
  %32 = call i8 @llvm.coro.suspend(token %31, i1 false)
  %33 = sext i8 %32 to i32
  switch i32 %33, label %40 [
    i32 0, label %34
    i32 1, label %38
  ]

34:                                               ; preds = %24
  %35 = call i1 @mlirAsyncRuntimeIsTokenError(ptr %30)
  call void @mlirAsyncRuntimeDropRef(ptr %30, i64 1)
  br i1 %35, label %37, label %36

36:                                               ; preds = %34
  call void @mlirAsyncRuntimeEmplaceToken(ptr %11)
  br label %38

37:                                               ; preds = %34
  call void @mlirAsyncRuntimeSetTokenError(ptr %11)
  br label %38

38:                                               ; preds = %37, %36, %24, %5
  %39 = call ptr @llvm.coro.free(token %12, ptr %20)
  call void @free(ptr %39)
  br label %40

40:                                               ; preds = %38, %24, %5
  call void @llvm.coro.end(ptr %20, i1 false, token none)
  ret ptr %11
}

; Function Attrs: presplitcoroutine
define ptr @async_execute_fn_3(ptr %0) #0 {
  %2 = call ptr @mlirAsyncRuntimeCreateToken()
  %3 = call token @llvm.coro.id(i32 0, ptr null, ptr null, ptr null)
  %4 = call i64 @llvm.coro.size.i64()
  %5 = call i64 @llvm.coro.align.i64()
  %6 = add i64 %4, %5
  %7 = sub i64 %6, 1
  %8 = sub i64 0, %5
  %9 = and i64 %7, %8
  %10 = call ptr @aligned_alloc(i64 %5, i64 %9)
  %11 = call ptr @llvm.coro.begin(token %3, ptr %10)
  %12 = call token @llvm.coro.save(ptr %11)
  call void @mlirAsyncRuntimeExecute(ptr %11, ptr @__resume)
  %13 = call i8 @llvm.coro.suspend(token %12, i1 false)
  %14 = sext i8 %13 to i32
  switch i32 %14, label %25 [
    i32 0, label %15
    i32 1, label %23
  ]

15:                                               ; preds = %1
  %16 = call token @llvm.coro.save(ptr %11)
  call void @mlirAsyncRuntimeAwaitTokenAndExecute(ptr %0, ptr %11, ptr @__resume)
  %17 = call i8 @llvm.coro.suspend(token %16, i1 false)
  %18 = sext i8 %17 to i32
  switch i32 %18, label %25 [
    i32 0, label %19
    i32 1, label %23
  ]

19:                                               ; preds = %15
  %20 = call i1 @mlirAsyncRuntimeIsTokenError(ptr %0)
  call void @mlirAsyncRuntimeDropRef(ptr %0, i64 1)
  br i1 %20, label %22, label %21

21:                                               ; preds = %19
  call void @mlirAsyncRuntimeEmplaceToken(ptr %2)
  br label %23

22:                                               ; preds = %19
  call void @mlirAsyncRuntimeSetTokenError(ptr %2)
  br label %23

23:                                               ; preds = %22, %21, %15, %1
  %24 = call ptr @llvm.coro.free(token %3, ptr %11)
  call void @free(ptr %24)
  br label %25

25:                                               ; preds = %23, %15, %1
  call void @llvm.coro.end(ptr %11, i1 false, token none)
  ret ptr %2
}

declare void @mlirAsyncRuntimeAddRef(ptr, i64)

declare void @mlirAsyncRuntimeDropRef(ptr, i64)

declare ptr @mlirAsyncRuntimeCreateToken()

declare ptr @mlirAsyncRuntimeCreateValue(i64)

declare ptr @mlirAsyncRuntimeCreateGroup(i64)

declare void @mlirAsyncRuntimeEmplaceToken(ptr)

declare void @mlirAsyncRuntimeEmplaceValue(ptr)

declare void @mlirAsyncRuntimeSetTokenError(ptr)

declare void @mlirAsyncRuntimeSetValueError(ptr)

declare i1 @mlirAsyncRuntimeIsTokenError(ptr)

declare i1 @mlirAsyncRuntimeIsValueError(ptr)

declare i1 @mlirAsyncRuntimeIsGroupError(ptr)

declare void @mlirAsyncRuntimeAwaitToken(ptr)

declare void @mlirAsyncRuntimeAwaitValue(ptr)

declare void @mlirAsyncRuntimeAwaitAllInGroup(ptr)

declare void @mlirAsyncRuntimeExecute(ptr, ptr)

declare ptr @mlirAsyncRuntimeGetValueStorage(ptr)

declare i64 @mlirAsyncRuntimeAddTokenToGroup(ptr, ptr)

declare void @mlirAsyncRuntimeAwaitTokenAndExecute(ptr, ptr, ptr)

declare void @mlirAsyncRuntimeAwaitValueAndExecute(ptr, ptr, ptr)

declare void @mlirAsyncRuntimeAwaitAllInGroupAndExecute(ptr, ptr, ptr)

declare i64 @mlirAsyncRuntimGetNumWorkerThreads()

define void @__resume(ptr %0) {
  call void @llvm.coro.resume(ptr %0)
  ret void
}

; Function Attrs: nocallback nofree nosync nounwind willreturn memory(argmem: read)
declare token @llvm.coro.id(i32, ptr readnone, ptr readonly captures(none), ptr) #1

; Function Attrs: nounwind memory(none)
declare i64 @llvm.coro.size.i64() #2

; Function Attrs: nounwind memory(none)
declare i64 @llvm.coro.align.i64() #2

; Function Attrs: nounwind
declare ptr @llvm.coro.begin(token, ptr writeonly) #3

; Function Attrs: nomerge nounwind
declare token @llvm.coro.save(ptr) #4

; Function Attrs: nounwind
declare i8 @llvm.coro.suspend(token, i1) #3

; Function Attrs: nounwind memory(argmem: read)
declare ptr @llvm.coro.free(token, ptr readonly captures(none)) #5

; Function Attrs: nounwind
declare void @llvm.coro.end(ptr, i1, token) #3

declare void @llvm.coro.resume(ptr)

attributes #0 = { presplitcoroutine }
attributes #1 = { nocallback nofree nosync nounwind willreturn memory(argmem: read) }
attributes #2 = { nounwind memory(none) }
attributes #3 = { nounwind }
attributes #4 = { nomerge nounwind }
attributes #5 = { nounwind memory(argmem: read) }

!llvm.module.flags = !{!0}

!0 = !{i32 2, !"Debug Info Version", i32 3}
