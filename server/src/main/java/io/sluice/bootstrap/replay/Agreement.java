package io.sluice.bootstrap.replay;

import java.util.Map;
import java.util.TreeMap;

/**
 * How far a replay's decisions agree with the recorded ones (docs/replay.md, "Fidelity"): the share
 * of requests decided the same ({@link Verdict}: admit, queue, degrade by rung, refuse by reason),
 * the mean and largest error of the queue wait over requests that waited in either, the goodput the
 * record shows, the most frequent disagreements (at most {@link #MAX_PAIRS} kinds) and the first
 * record decided otherwise (where a replay's divergence starts).
 */
final class Agreement {
  static final int MAX_PAIRS = 64;

  long compared;
  long same;
  long waitCompared;
  long waitErrorMillisSum;
  long waitErrorMillisMax;
  long recordedGoodput;
  final Map<String, Long> disagreements = new TreeMap<>();
  String first = ""; // the first record decided otherwise: where, and how

  void compare(Recorded r, String verdict, long waitMillis) {
    compared++;
    if (r.goodput()) {
      recordedGoodput++;
    }
    if (r.decided().equals(verdict)) {
      same++;
    } else {
      String pair = r.decided() + " -> " + verdict;
      if (first.isEmpty()) {
        first = r.source() + " (" + pair + ")";
      }
      if (disagreements.containsKey(pair) || disagreements.size() < MAX_PAIRS) {
        disagreements.merge(pair, 1L, Long::sum);
      }
    }
    if (r.queueWaitMs() > 0 || waitMillis > 0) {
      long err = Math.abs(r.queueWaitMs() - waitMillis);
      waitCompared++;
      waitErrorMillisSum += err;
      waitErrorMillisMax = Math.max(waitErrorMillisMax, err);
    }
  }

  double share() {
    return compared == 0 ? 1.0 : (double) same / compared;
  }

  double meanWaitErrorMillis() {
    return waitCompared == 0 ? 0 : (double) waitErrorMillisSum / waitCompared;
  }
}
