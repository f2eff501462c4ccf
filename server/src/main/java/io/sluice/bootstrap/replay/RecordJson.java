package io.sluice.bootstrap.replay;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.google.protobuf.util.Timestamps;
import io.sluice.api.v1.Decision;
import io.sluice.api.v1.Outcome;
import java.io.IOException;
import java.text.ParseException;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Reads one decision record ({@code sluice.v1.AdmissionRecord} in proto3 JSON) as a replay needs
 * it, in one pass of Jackson's streaming parser: only the fields a replay reads are kept, every
 * other field (and object) is skipped unread. Accepts what protobuf's JSON parser accepts for these
 * fields: lowerCamelCase or the proto's own names, int64 as a string or a number, an enum by its
 * name or number, an RFC 3339 time. One instance a reader: its buffers are reused from record to
 * record (nothing is allocated per field but the strings kept). Not thread-safe.
 */
final class RecordJson {
  private static final JsonFactory JSON = new JsonFactory();

  // string slots
  private static final int ARRIVAL = 0;
  private static final int POOL = 1;
  private static final int CLASS = 2;
  private static final int TENANT = 3;
  private static final int ROUTE = 4;
  private static final int FORMAT = 5;
  private static final int REASON = 6;
  private static final int DECISION = 7;
  private static final int OUTCOME = 8;
  private static final int RUNG = 9;
  private static final int STRINGS = 10;

  // number slots
  private static final int DEADLINE = 0;
  private static final int LATENCY_US = 1;
  private static final int QUEUE_POSITION = 2;
  private static final int QUEUE_WAIT = 3;
  private static final int UPSTREAM_STATUS = 4;
  private static final int HELD = 5;
  private static final int SERVICE = 6;
  private static final int ENDED = 7;
  private static final int E_INPUT = 8;
  private static final int E_RESERVE = 9;
  private static final int E_REQUESTED = 10;
  private static final int A_INPUT = 11;
  private static final int A_OUTPUT = 12;
  private static final int A_REPORTED = 13;
  private static final int A_METERED = 14;
  private static final int T_TICK = 15;
  private static final int T_DECIDED = 16;
  private static final int T_ADMITTED = 17;
  private static final int T_ENDED = 18;
  private static final int T_DEADLINE = 19;
  private static final int HAS_ACTUAL = 20;
  private static final int HAS_TIMING = 21;
  private static final int NUMBERS = 22;

  private static final int STRING = 1 << 16; // a slot's kind, above its index
  private static final int BOOL = 2 << 16;
  private static final int OBJECT = 3 << 16;
  private static final int SLOT = 0xffff;

  /** Field name (lowerCamelCase and the proto's name) to slot, per object. */
  private static final Map<String, Integer> TOP = new HashMap<>();

  private static final Map<String, Integer> ESTIMATE = new HashMap<>();
  private static final Map<String, Integer> ACTUAL = new HashMap<>();
  private static final Map<String, Integer> DEGRADE = new HashMap<>();
  private static final Map<String, Integer> TIMING = new HashMap<>();
  private static final Map<Integer, Map<String, Integer>> OBJECTS =
      Map.of(0, ESTIMATE, 1, ACTUAL, 2, DEGRADE, 3, TIMING);

  static {
    field(TOP, "arrivalTime", "arrival_time", STRING | ARRIVAL);
    field(TOP, "pool", "pool", STRING | POOL);
    field(TOP, "className", "class_name", STRING | CLASS);
    field(TOP, "tenant", "tenant", STRING | TENANT);
    field(TOP, "route", "route", STRING | ROUTE);
    field(TOP, "requestFormat", "request_format", STRING | FORMAT);
    field(TOP, "reason", "reason", STRING | REASON);
    field(TOP, "decision", "decision", STRING | DECISION);
    field(TOP, "outcome", "outcome", STRING | OUTCOME);
    field(TOP, "deadlineMs", "deadline_ms", DEADLINE);
    field(TOP, "decisionLatencyUs", "decision_latency_us", LATENCY_US);
    field(TOP, "queuePosition", "queue_position", QUEUE_POSITION);
    field(TOP, "queueWaitMs", "queue_wait_ms", QUEUE_WAIT);
    field(TOP, "upstreamStatus", "upstream_status", UPSTREAM_STATUS);
    field(TOP, "heldMs", "held_ms", HELD);
    field(TOP, "serviceMs", "service_ms", SERVICE);
    field(TOP, "endedAfterMs", "ended_after_ms", ENDED);
    field(TOP, "estimate", "estimate", OBJECT | 0);
    field(TOP, "actual", "actual", OBJECT | 1);
    field(TOP, "degrade", "degrade", OBJECT | 2);
    field(TOP, "timing", "timing", OBJECT | 3);
    field(ESTIMATE, "inputTokens", "input_tokens", E_INPUT);
    field(ESTIMATE, "outputReserveTokens", "output_reserve_tokens", E_RESERVE);
    field(ESTIMATE, "requestedOutputTokens", "requested_output_tokens", E_REQUESTED);
    field(ACTUAL, "inputTokens", "input_tokens", A_INPUT);
    field(ACTUAL, "outputTokens", "output_tokens", A_OUTPUT);
    field(ACTUAL, "reported", "reported", BOOL | A_REPORTED);
    field(ACTUAL, "meteredOutputTokens", "metered_output_tokens", A_METERED);
    field(DEGRADE, "rung", "rung", STRING | RUNG);
    field(TIMING, "arrivalTickNs", "arrival_tick_ns", T_TICK);
    field(TIMING, "decidedAfterNs", "decided_after_ns", T_DECIDED);
    field(TIMING, "admittedAfterNs", "admitted_after_ns", T_ADMITTED);
    field(TIMING, "endedAfterNs", "ended_after_ns", T_ENDED);
    field(TIMING, "deadlineAfterNs", "deadline_after_ns", T_DEADLINE);
  }

  private static void field(Map<String, Integer> m, String json, String proto, int code) {
    m.put(json, code);
    m.put(proto, code);
  }

  private final @Nullable String[] text = new String[STRINGS];
  private final long[] number = new long[NUMBERS];
  private long present; // bit per number slot
  private @Nullable String secondPrefix; // the arrival times' last whole second, and its epoch
  private long secondEpoch;

  /** The record of one JSON line, null when it is one a replay skips; malformed: thrown. */
  @Nullable Recorded parse(String json, String where) {
    Arrays.fill(text, null);
    Arrays.fill(number, 0);
    present = 0;
    try (JsonParser p = JSON.createParser(json)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        throw new RecordReader.Malformed(where, NOT_A_RECORD + "expected a JSON object");
      }
      object(p, TOP, where);
      if (p.nextToken() != null) {
        throw new RecordReader.Malformed(where, NOT_A_RECORD + "text after the record's end");
      }
    } catch (IOException e) {
      throw new RecordReader.Malformed(where, NOT_A_RECORD + message(e));
    }
    return build(where);
  }

  private static final String NOT_A_RECORD = "not a sluice.v1.AdmissionRecord: ";

  private void object(JsonParser p, Map<String, Integer> fields, String where) throws IOException {
    JsonToken t;
    while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
      String name = p.currentName();
      JsonToken v = p.nextToken();
      Integer code = fields.get(name);
      if (code == null || v == JsonToken.VALUE_NULL) {
        p.skipChildren();
        continue;
      }
      int slot = code & SLOT;
      switch (code & ~SLOT) {
        case STRING -> text[slot] = string(p, v, name, where);
        case BOOL -> set(slot, bool(p, v, name, where) ? 1 : 0);
        case OBJECT -> {
          if (v != JsonToken.START_OBJECT) {
            throw new RecordReader.Malformed(
                where, NOT_A_RECORD + name + ": " + p.getText() + " (expected: an object)");
          }
          if (slot == 1) {
            set(HAS_ACTUAL, 1);
          } else if (slot == 3) {
            set(HAS_TIMING, 1);
          }
          object(p, java.util.Objects.requireNonNull(OBJECTS.get(slot)), where);
        }
        default -> set(slot, integer(p, v, name, where));
      }
    }
    if (t != JsonToken.END_OBJECT) {
      throw new RecordReader.Malformed(where, NOT_A_RECORD + "unexpected " + t);
    }
  }

  private void set(int slot, long value) {
    number[slot] = value;
    present |= 1L << slot;
  }

  private boolean has(int slot) {
    return (present & (1L << slot)) != 0;
  }

  private static String string(JsonParser p, JsonToken v, String name, String where)
      throws IOException {
    if (v == JsonToken.VALUE_STRING) {
      return p.getText();
    }
    if (v == JsonToken.VALUE_NUMBER_INT) { // an enum by its number
      return "#" + p.getIntValue();
    }
    throw new RecordReader.Malformed(
        where, NOT_A_RECORD + name + ": " + p.getText() + " (expected: a string)");
  }

  private static boolean bool(JsonParser p, JsonToken v, String name, String where)
      throws IOException {
    if (v == JsonToken.VALUE_TRUE || v == JsonToken.VALUE_FALSE) {
      return v == JsonToken.VALUE_TRUE;
    }
    if (v == JsonToken.VALUE_STRING
        && ("true".equals(p.getText()) || "false".equals(p.getText()))) {
      return "true".equals(p.getText());
    }
    throw new RecordReader.Malformed(
        where, NOT_A_RECORD + name + ": " + p.getText() + " (expected: true or false)");
  }

  private static long integer(JsonParser p, JsonToken v, String name, String where)
      throws IOException {
    try {
      if (v == JsonToken.VALUE_NUMBER_INT) {
        return p.getLongValue();
      }
      if (v == JsonToken.VALUE_STRING) {
        return Long.parseLong(p.getText().trim());
      }
      if (v == JsonToken.VALUE_NUMBER_FLOAT
          && p.getDoubleValue() == Math.rint(p.getDoubleValue())) {
        return (long) p.getDoubleValue();
      }
    } catch (NumberFormatException | IOException e) {
      // below
    }
    throw new RecordReader.Malformed(
        where, NOT_A_RECORD + name + ": " + p.getText() + " (expected: an integer)");
  }

  private @Nullable Recorded build(String where) {
    Decision decision = decision(text[DECISION]);
    if (decision == Decision.DECISION_ANSWER) {
      return null; // answered by Sluice itself (a job accepted, a status): nothing ran
    }
    String arrival = text[ARRIVAL];
    if (arrival == null) {
      throw new RecordReader.Malformed(where, "arrivalTime: missing (expected: an RFC 3339 time)");
    }
    long arrivalMillis = millis(arrival, where);
    String pool = require(where, "pool", text[POOL]);
    String cls = require(where, "className", text[CLASS]);
    if (decision == Decision.DECISION_UNSPECIFIED || decision == Decision.UNRECOGNIZED) {
      throw new RecordReader.Malformed(
          where,
          "decision: "
              + (text[DECISION] == null ? decision : text[DECISION])
              + " (expected: DECISION_ADMIT, _QUEUE, _DEGRADE, _REJECT)");
    }
    if (number[DEADLINE] < 0) {
      throw new RecordReader.Malformed(
          where, "deadlineMs: " + number[DEADLINE] + " (expected: >= 0)");
    }
    if (number[E_INPUT] < 0) {
      throw new RecordReader.Malformed(
          where, "estimate.inputTokens: " + number[E_INPUT] + " (expected: >= 0)");
    }
    if (has(SERVICE) && number[SERVICE] < 0) {
      throw new RecordReader.Malformed(
          where, "serviceMs: " + number[SERVICE] + " (expected: >= 0)");
    }
    boolean ran = decision == Decision.DECISION_ADMIT || decision == Decision.DECISION_DEGRADE;
    long service = has(SERVICE) ? number[SERVICE] : ran ? number[HELD] : -1;
    long ended =
        number[ENDED] > 0
            ? number[ENDED]
            : number[QUEUE_WAIT] + number[LATENCY_US] / 1000 + Math.max(0, service);
    boolean reported = number[A_REPORTED] != 0;
    long out = reported ? number[A_OUTPUT] : has(HAS_ACTUAL) ? number[A_METERED] : -1;
    String reason = text[REASON] == null ? "" : text[REASON];
    String rung = text[RUNG] == null ? "" : text[RUNG];
    Recorded.Timing timing =
        has(HAS_TIMING) && has(T_TICK)
            ? new Recorded.Timing(
                number[T_TICK],
                number[T_DECIDED],
                has(T_ADMITTED) ? number[T_ADMITTED] : -1,
                number[T_ENDED],
                number[T_DEADLINE],
                0)
            : null;
    return new Recorded(
        arrivalMillis,
        where,
        pool,
        cls,
        orEmpty(text[TENANT]),
        timing,
        orEmpty(text[ROUTE]),
        orEmpty(text[FORMAT]),
        number[DEADLINE],
        number[E_INPUT],
        reported && number[A_INPUT] > 0 ? number[A_INPUT] : number[E_INPUT],
        number[E_REQUESTED] > 0 ? number[E_REQUESTED] : number[E_RESERVE],
        ran ? service : -1,
        out,
        outcome(text[OUTCOME]),
        (int) number[UPSTREAM_STATUS],
        ended,
        Verdict.of(decision, rung, reason, number[QUEUE_POSITION], number[QUEUE_WAIT]),
        number[QUEUE_WAIT],
        decideAfter(ran, service));
  }

  /**
   * The body's wait: the end's offset less the queue wait and the service (or the decision time),
   * each recorded in whole milliseconds, so up to 2 ms of it is rounding, not a wait: read as 0.
   */
  private long decideAfter(boolean ran, long service) {
    if (number[ENDED] <= 0) {
      return 0;
    }
    long after =
        number[ENDED]
            - number[QUEUE_WAIT]
            - (ran ? Math.max(0, service) : number[LATENCY_US] / 1000);
    return after <= Recorded.ROUNDING_MS ? 0 : after;
  }

  private static String orEmpty(@Nullable String s) {
    return s == null ? "" : s;
  }

  private static String require(String where, String field, @Nullable String value) {
    if (value == null || value.isEmpty()) {
      throw new RecordReader.Malformed(where, field + ": missing (expected: a name)");
    }
    return value;
  }

  private static Decision decision(@Nullable String s) {
    if (s == null) {
      return Decision.DECISION_UNSPECIFIED;
    }
    if (s.startsWith("#")) {
      Decision d = Decision.forNumber(Integer.parseInt(s.substring(1)));
      return d == null ? Decision.UNRECOGNIZED : d;
    }
    try {
      return Decision.valueOf(s);
    } catch (IllegalArgumentException e) {
      return Decision.UNRECOGNIZED;
    }
  }

  private static Outcome outcome(@Nullable String s) {
    if (s == null) {
      return Outcome.OUTCOME_UNSPECIFIED;
    }
    if (s.startsWith("#")) {
      Outcome o = Outcome.forNumber(Integer.parseInt(s.substring(1)));
      return o == null ? Outcome.UNRECOGNIZED : o;
    }
    try {
      return Outcome.valueOf(s);
    } catch (IllegalArgumentException e) {
      return Outcome.UNRECOGNIZED;
    }
  }

  /**
   * Epoch milliseconds of an RFC 3339 time. The common form ({@code 2027-01-15T08:00:00.123Z})
   * reads its whole second once per second of records; any other goes to protobuf's parser.
   */
  private long millis(String t, String where) {
    int n = t.length();
    if (n >= 20 && t.charAt(n - 1) == 'Z' && t.charAt(10) == 'T') {
      char c = t.charAt(19);
      if (c == 'Z' || c == '.') {
        long second = second(t);
        if (second != Long.MIN_VALUE) {
          long ms = 0;
          int digits = 0;
          for (int i = 20; c == '.' && i < n - 1; i++) {
            char d = t.charAt(i);
            if (d < '0' || d > '9') {
              return slowMillis(t, where);
            }
            if (digits++ < 3) {
              ms = ms * 10 + (d - '0');
            }
          }
          for (; digits < 3; digits++) {
            ms *= 10;
          }
          return second * 1000 + ms;
        }
      }
    }
    return slowMillis(t, where);
  }

  private long second(String t) {
    String cached = secondPrefix;
    if (cached != null && t.regionMatches(0, cached, 0, 19)) {
      return secondEpoch;
    }
    try {
      String prefix = t.substring(0, 19);
      secondEpoch = LocalDateTime.parse(prefix).toEpochSecond(ZoneOffset.UTC);
      secondPrefix = prefix;
      return secondEpoch;
    } catch (RuntimeException e) {
      return Long.MIN_VALUE;
    }
  }

  private static long slowMillis(String t, String where) {
    try {
      return Timestamps.toMillis(Timestamps.parse(t));
    } catch (ParseException | RuntimeException e) {
      throw new RecordReader.Malformed(
          where, "arrivalTime: " + t + " (expected: an RFC 3339 time)");
    }
  }

  private static String message(Exception e) {
    String m = e.getMessage();
    if (m == null) {
      return e.getClass().getSimpleName();
    }
    m = m.replace('\n', ' ');
    return m.length() <= 200 ? m : m.substring(0, 200) + "...";
  }
}
