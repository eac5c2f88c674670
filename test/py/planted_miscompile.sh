#!/bin/sh
# A deliberately wrong "pass" for the tests of llvmaccel check: IR on stdin,
# IR on stdout. Never used outside tests: it is how the suite proves that
# check finds a miscompile and llvm-reduce shrinks it (awk and sed, so that
# the thousands of runs a reduction makes stay cheap).
#   planted_miscompile.sh lookahead   index arrays loaded 16 iterations ahead,
#                                     unclamped (faults at the guard page)
#   planted_miscompile.sh off-by-one  latches `icmp eq %x.next, %n` run once more
case "${1:-lookahead}" in
  off-by-one)
    exec sed -E 's/icmp eq i64 (%[A-Za-z0-9_.]+\.next), /icmp ugt i64 \1, /' ;;
  lookahead)
    exec awk '
      { print }
      /^declare void @llvm\.prefetch\.p0/ { declared = 1 }
      $3 == "getelementptr" && $4 == "inbounds" && ($5 == "i64," || $5 == "i32,") &&
      $6 == "ptr" && $8 == "i64" && NF == 9 {
        n++; ty = substr($5, 1, 3); base = substr($7, 1, length($7) - 1); idx = $9
        a = "%ahead" n
        print "  " a ".i = add i64 " idx ", 16"
        print "  " a ".p = getelementptr inbounds " ty ", ptr " base ", i64 " a ".i"
        print "  " a ".v = load " ty ", ptr " a ".p"
        print "  " a ".a = getelementptr i8, ptr " base ", " ty " " a ".v"
        print "  call void @llvm.prefetch.p0(ptr " a ".a, i32 0, i32 3, i32 1)"
      }
      END { if (n && !declared) print "declare void @llvm.prefetch.p0(ptr, i32, i32, i32)" }' ;;
  *) echo "planted_miscompile.sh: unknown mode $1" >&2; exit 2 ;;
esac
