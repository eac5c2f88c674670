// Two independent tasks with real work that write the same elements: a data
// race the ThreadSanitizer set-up of tsan.test must report. Each task first
// meets the other (@racy_rendezvous, racy-driver.c): while the first spins,
// another worker must take the second, so the two run on different threads
// even when a loaded machine would have let one worker run both in turn
// (then no race exists to report).
func.func private @racy_rendezvous()
func.func @racy(%m: memref<16xi32>, %n: index) -> !async.token {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %one = arith.constant 1 : i32
  %t0 = async.execute {
    func.call @racy_rendezvous() : () -> ()
    scf.for %i = %c0 to %n step %c1 {
      %k = arith.remui %i, %c16 : index
      %x = memref.load %m[%k] : memref<16xi32>
      %y = arith.addi %x, %one : i32
      memref.store %y, %m[%k] : memref<16xi32>
    }
    async.yield
  }
  %t1 = async.execute {
    func.call @racy_rendezvous() : () -> ()
    scf.for %i = %c0 to %n step %c1 {
      %k = arith.remui %i, %c16 : index
      %x = memref.load %m[%k] : memref<16xi32>
      %y = arith.addi %x, %one : i32
      memref.store %y, %m[%k] : memref<16xi32>
    }
    async.yield
  }
  %t2 = async.execute [%t0, %t1] { async.yield }
  return %t2 : !async.token
}
