package io.sluice.emulator;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/** The ext_proc filter counters, named as Envoy names them (one set per emulator). */
public final class Stats {
  final LongAdder streamsStarted = new LongAdder();
  final LongAdder streamMsgsSent = new LongAdder();
  final LongAdder streamMsgsReceived = new LongAdder();
  final LongAdder spuriousMsgsReceived = new LongAdder();
  final LongAdder streamsClosed = new LongAdder();
  final LongAdder streamsFailed = new LongAdder();
  final LongAdder failureModeAllowed = new LongAdder();
  final LongAdder messageTimeouts = new LongAdder();
  final LongAdder rejectedHeaderMutations = new LongAdder();
  final LongAdder overrideMessageTimeoutReceived = new LongAdder();
  final LongAdder overrideMessageTimeoutIgnored = new LongAdder();
  final LongAdder immediateResponsesSent = new LongAdder();
  final LongAdder clearRouteCacheIgnored = new LongAdder();
  final LongAdder clearRouteCacheDisabled = new LongAdder();

  public long streamsStarted() {
    return streamsStarted.sum();
  }

  public long streamMsgsSent() {
    return streamMsgsSent.sum();
  }

  public long streamMsgsReceived() {
    return streamMsgsReceived.sum();
  }

  public long spuriousMsgsReceived() {
    return spuriousMsgsReceived.sum();
  }

  public long streamsClosed() {
    return streamsClosed.sum();
  }

  public long streamsFailed() {
    return streamsFailed.sum();
  }

  public long failureModeAllowed() {
    return failureModeAllowed.sum();
  }

  public long messageTimeouts() {
    return messageTimeouts.sum();
  }

  public long rejectedHeaderMutations() {
    return rejectedHeaderMutations.sum();
  }

  public long overrideMessageTimeoutReceived() {
    return overrideMessageTimeoutReceived.sum();
  }

  public long overrideMessageTimeoutIgnored() {
    return overrideMessageTimeoutIgnored.sum();
  }

  public long immediateResponsesSent() {
    return immediateResponsesSent.sum();
  }

  /**
   * {@code clear_route_cache_ignored}: a request-path response asked to clear the route cache but
   * carried no {@code header_mutation}.
   */
  public long clearRouteCacheIgnored() {
    return clearRouteCacheIgnored.sum();
  }

  /**
   * {@code clear_route_cache_disabled}: a request-path response with a {@code header_mutation}
   * asked to clear the route cache, but {@code route_cache_action} is RETAIN (or {@code
   * disable_clear_route_cache} is set).
   */
  public long clearRouteCacheDisabled() {
    return clearRouteCacheDisabled.sum();
  }

  /** All counters under their Envoy names, e.g. {@code streams_started}. */
  public Map<String, Long> snapshot() {
    Map<String, Long> m = new LinkedHashMap<>();
    m.put("streams_started", streamsStarted());
    m.put("stream_msgs_sent", streamMsgsSent());
    m.put("stream_msgs_received", streamMsgsReceived());
    m.put("spurious_msgs_received", spuriousMsgsReceived());
    m.put("streams_closed", streamsClosed());
    m.put("streams_failed", streamsFailed());
    m.put("failure_mode_allowed", failureModeAllowed());
    m.put("message_timeouts", messageTimeouts());
    m.put("rejected_header_mutations", rejectedHeaderMutations());
    m.put("override_message_timeout_received", overrideMessageTimeoutReceived());
    m.put("override_message_timeout_ignored", overrideMessageTimeoutIgnored());
    m.put("immediate_responses_sent", immediateResponsesSent());
    m.put("clear_route_cache_ignored", clearRouteCacheIgnored());
    m.put("clear_route_cache_disabled", clearRouteCacheDisabled());
    return m;
  }

  @Override
  public String toString() {
    return snapshot().toString();
  }
}
