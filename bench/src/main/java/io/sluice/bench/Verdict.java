package io.sluice.bench;

/** One target and whether it holds. */
record Verdict(String target, String measured, boolean pass) {
  String line() {
    return (pass ? "PASS " : "FAIL ") + target + ": " + measured;
  }
}
