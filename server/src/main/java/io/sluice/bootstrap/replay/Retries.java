package io.sluice.bootstrap.replay;

import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Clients that retry a refusal, as a replay models them (docs/replay.md, "Retries"). A client keeps
 * its deadline across attempts, so tenant, class and the deadline to the nanosecond name one
 * client's attempts (timed records only).
 *
 * <ul>
 *   <li>A recorded retry is sent only once the replay has refused its client's attempt: one that
 *       comes while the replay still holds that attempt (waiting for its body, in the queue) waits
 *       here and is sent a Retry-After after the replay's own refusal, or is dropped when the
 *       replay admits the attempt ({@code not_sent}); one that comes after the replay admitted it
 *       is dropped.
 *   <li>A client the replay refuses where the record did not (no recorded retry follows), or sooner
 *       than the record did (the recorded retry would come late), retries a Retry-After after the
 *       replay's refusal as often as the record shows clients retrying a refusal, and its later
 *       recorded attempts are dropped ({@link #drive}): the share of recorded refusals with more
 *       than a second left before their deadline (the shortest Retry-After) that a retry followed,
 *       among those whose client had made fewer attempts than the most one client made.
 * </ul>
 *
 * <p>Memory: at most {@link #MAX_KEPT} clients in each map, pruned once past their deadline.
 */
final class Retries {
  static final int MAX_KEPT = 1_000_000;

  /** A recorded retry waiting for the replay's decision on its client's attempt. */
  record Parked(Recorded record, long demand, int attempt) {}

  private final LinkedHashMap<String, Long> held = new LinkedHashMap<>(); // client: deadline
  private final Map<String, Parked> parked = new HashMap<>();
  private final LinkedHashMap<String, Long> driven = new LinkedHashMap<>(); // client: deadline
  private final LinkedHashMap<String, long[]> refusedInRecord = // client: deadline, attempts
      new LinkedHashMap<>();
  private int maxAttempts = 1;
  private long retried; // recorded refusals a retry could follow that one did
  private long notRetried; // ... that none did by their deadline
  private double credit;

  /** Tenant, class and the client's deadline to the nanosecond (epoch): what its retries share. */
  static @Nullable String client(Recorded r) {
    return r.timed()
        ? r.tenant() + '\n' + r.className() + '\n' + (r.arrivalNanos() + r.deadlineNanos())
        : null;
  }

  /**
   * Learns from a record of {@code c} ({@link #client}), in arrival order: whether it is a recorded
   * retry, whether its refusal may be followed by one. Returns its attempt number for its client.
   */
  int recorded(Recorded r, @Nullable String c) {
    if (c == null) {
      return 1;
    }
    long at = r.arrivalNanos();
    Iterator<long[]> it = refusedInRecord.values().iterator();
    while (it.hasNext()) {
      long[] v = it.next();
      if (v[0] >= at && refusedInRecord.size() < MAX_KEPT) {
        break;
      }
      it.remove(); // past its deadline: its client did not retry
      notRetried += v[2] != 0 && v[1] < maxAttempts ? 1 : 0;
    }
    long[] before = refusedInRecord.remove(c);
    int attempt = 1;
    if (before != null) {
      attempt = (int) before[1] + 1;
      maxAttempts = Math.max(maxAttempts, attempt);
      if (before[2] != 0) {
        retried++;
      }
    }
    if (Verdict.refused(r.decided())) {
      long refusedAt = at + Math.max(0, r.endedAfterNanos());
      long deadline = at + r.deadlineNanos();
      boolean couldRetry = deadline - refusedAt > 1_000_000_000L;
      refusedInRecord.put(c, new long[] {deadline, attempt, couldRetry ? 1 : 0});
    }
    return attempt;
  }

  /** The replay sends client {@code c}'s retries itself until {@code deadline} (ticker). */
  void drive(@Nullable String c, long deadline) {
    if (c != null) {
      driven.put(c, deadline);
    }
  }

  /** Whether the replay sends client {@code c}'s retries itself ({@link #drive}) at {@code now}. */
  boolean drives(String c, long now) {
    prune(driven, now);
    return driven.containsKey(c);
  }

  /** Whether the replay holds or admitted an attempt of this client. */
  boolean holds(@Nullable String client) {
    return client != null && held.containsKey(client);
  }

  /**
   * The replay holds an attempt of client {@code c} from {@code now} (ticker) to {@code deadline}.
   */
  void hold(@Nullable String c, long now, long deadline) {
    if (c != null) {
      prune(held, now);
      held.put(c, deadline);
    }
  }

  /**
   * A recorded retry of a client whose attempt the replay holds: kept until that attempt is
   * decided. False when it cannot be kept (one is already, or too many are): drop it.
   */
  boolean park(String client, Recorded r, long demand, int attempt) {
    if (parked.containsKey(client) || parked.size() >= MAX_KEPT) {
      return false;
    }
    parked.put(client, new Parked(r, demand, attempt));
    return true;
  }

  /**
   * The replay admitted its client's attempt, or its client left the queue: the retry kept for it
   * (never sent), if any.
   */
  @Nullable Parked settled(@Nullable String c) {
    return c == null ? null : parked.remove(c);
  }

  /** The replay refused its client's attempt: the recorded retry kept for it, if any. */
  @Nullable Parked refused(@Nullable String c) {
    if (c == null) {
      return null;
    }
    held.remove(c);
    return parked.remove(c);
  }

  /**
   * Whether a client the replay refused at its {@code attempt}, where the record brings no retry,
   * retries: as often as the record shows clients retrying (a running credit, no randomness).
   */
  boolean invents(int attempt) {
    if (attempt >= maxAttempts || retried == 0) {
      return false;
    }
    credit += (double) retried / (retried + notRetried);
    if (credit >= 1.0) {
      credit -= 1.0;
      return true;
    }
    return false;
  }

  /** Recorded retries still kept (their clients' attempts never decided): drop them. */
  Iterable<Parked> left() {
    return parked.values();
  }

  private static void prune(Map<String, Long> m, long now) { // oldest first
    Iterator<Long> it = m.values().iterator();
    while (it.hasNext()) {
      if (it.next() >= now && m.size() < MAX_KEPT) {
        break;
      }
      it.remove(); // past its deadline: no retry of it can come
    }
  }
}
