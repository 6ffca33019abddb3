# Helpers shared by the bash test scripts (tests/cli_smoke.sh, tests/test_sweep_cli.sh); sourced,
# not run. A script counts its checks in pass/fail and ends with `report NAME`, whose status (0 only
# when nothing failed) is then the script's exit status that CTest reads.

pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
# expect DESCRIPTION CONDITION: CONDITION is eval'ed, so it sees the caller's variables ($rc, $out, ...).
expect() { if eval "$2"; then ok; else bad "$1"; fi; }

# An empty work directory, whatever an earlier run left in it.
fresh_workdir() { rm -rf "$1" && mkdir -p "$1"; }

report() {
  echo "$1: $pass passed, $fail failed"
  [[ $fail -eq 0 ]]
}
