package io.sluice.bench;

import java.util.List;
import java.util.Map;
import jdk.jfr.consumer.RecordedFrame;

/**
 * The parts of a floor server's CPU samples ({@link FloorProfile}): each sample goes to the part of
 * its innermost frame that names one, so library frames (Jackson, the JDK's adders, protobuf) count
 * to the Sluice class, grpc or Netty frame that called them. Logging frames count as logging
 * wherever they are.
 */
final class FloorParts {
  private FloorParts() {}

  static final String BODY = "body read/scan (request body: JSON walk, prompt strings)";
  static final String TOKENIZER = "tokenizer (BPE, token counts, per-model encodings)";
  static final String USAGE = "usage read (the answer's usage, output metering)";
  static final String LEARNING = "learning (output reserves, service model)";
  static final String ADMISSION = "admission (session, checks, pool, retry, routing)";
  static final String METRICS = "metrics (Sluice's meters)";
  static final String RECORDS = "records and logs (decision log, record logs)";
  static final String LOGGING = "logging frameworks";
  static final String ANSWERS = "answers built and encoded (mutations, metadata)";
  static final String WIRE_READ = "wire read (Inbound, signals, metadata)";
  static final String STREAM = "stream and call plumbing (ExtProcStream, ExtProcCall)";
  static final String GUARD = "HTTP/2 guard (sluice.transport)";
  static final String GRPC = "gRPC (call, framing, deframing, the no-op's protobuf)";
  static final String NETTY = "Netty (HTTP/2 codec, buffers, promises, writes)";
  static final String NOOP = "the no-op's own handler (sluice.bench)";
  static final String OTHER = "other (JDK, JVM, not under a layer frame)";

  /** Sluice classes by simple name (package-qualified where a name alone is ambiguous). */
  private static final Map<String, String> BY_CLASS =
      Map.ofEntries(
          Map.entry("core.estimate.RequestBodyReader", BODY),
          Map.entry("core.estimate.Utf8", BODY),
          Map.entry("core.estimate.BodyMembers", BODY),
          Map.entry("core.estimate.BodyScan", BODY),
          Map.entry("core.estimate.ScanWalk", BODY),
          Map.entry("core.estimate.JsonBounds", BODY),
          Map.entry("core.estimate.LaxValue", BODY),
          Map.entry("core.estimate.ToolScan", BODY),
          Map.entry("core.estimate.FanOut", BODY),
          Map.entry("core.estimate.BodyRewrite", BODY),
          Map.entry("core.estimate.RequestFormat", BODY),
          Map.entry("core.estimate.TokenEstimator", TOKENIZER),
          Map.entry("core.estimate.TokenEstimate", TOKENIZER),
          Map.entry("core.estimate.TokenCountCache", TOKENIZER),
          Map.entry("core.estimate.ModelEncodings", TOKENIZER),
          Map.entry("core.estimate.TokenTally", TOKENIZER),
          Map.entry("core.estimate.LearnedBytesPerToken", TOKENIZER),
          Map.entry("core.estimate.UsageScan", USAGE),
          Map.entry("core.estimate.UsageExtractor", USAGE),
          Map.entry("core.estimate.UsageFields", USAGE),
          Map.entry("core.estimate.Usage", USAGE),
          Map.entry("core.estimate.OutputMeter", USAGE),
          Map.entry("core.estimate.SseFramer", USAGE),
          Map.entry("core.estimate.NativeUsage", USAGE),
          Map.entry("core.estimate.OutputReserves", LEARNING),
          Map.entry("core.estimate.ReserveStats", LEARNING),
          Map.entry("core.estimate.ReserveKey", LEARNING),
          Map.entry("core.estimate.ReserveBounds", LEARNING),
          Map.entry("core.estimate.DecayedLogHistogram", LEARNING),
          Map.entry("core.queue.ServiceModel", LEARNING),
          Map.entry("core.session.ReserveLearner", LEARNING),
          Map.entry("observability.DecisionLog", RECORDS),
          Map.entry("observability.DecisionLogBudget", RECORDS),
          Map.entry("observability.DecisionRecordPart", RECORDS),
          Map.entry("observability.RecordLogs", RECORDS),
          Map.entry("observability.RotatingFile", RECORDS),
          Map.entry("extproc.AnswerEncoder", ANSWERS),
          Map.entry("extproc.AdmitHeaders", ANSWERS),
          Map.entry("extproc.Responses", ANSWERS),
          Map.entry("extproc.DecisionAnswers", ANSWERS),
          Map.entry("extproc.Answer", ANSWERS),
          Map.entry("extproc.AnswerSources", ANSWERS),
          Map.entry("extproc.HeaderKeys", ANSWERS),
          Map.entry("wire.ProtoWriter", ANSWERS),
          Map.entry("wire.EncodedStream", ANSWERS),
          Map.entry("extproc.Inbound", WIRE_READ),
          Map.entry("extproc.InboundMarshaller", WIRE_READ),
          Map.entry("extproc.EnvoyRequest", WIRE_READ),
          Map.entry("extproc.EnvoySignals", WIRE_READ),
          Map.entry("extproc.InitialMetadata", WIRE_READ),
          Map.entry("extproc.NativeMetadataReader", WIRE_READ),
          Map.entry("wire.ProtoReader", WIRE_READ));

  /** The part of one CPU sample's stack (innermost frame first). */
  static String part(List<RecordedFrame> frames) {
    for (RecordedFrame f : frames) {
      String c = f.getMethod() == null ? "" : f.getMethod().getType().getName();
      if (c.startsWith("org.slf4j.")
          || c.startsWith("ch.qos.logback.")
          || c.startsWith("org.apache.logging.")) {
        return LOGGING;
      }
    }
    for (RecordedFrame f : frames) {
      String c = f.getMethod() == null ? "" : f.getMethod().getType().getName();
      if (c.startsWith("io.sluice.")) {
        return sluicePart(c.substring("io.sluice.".length()));
      }
      if (c.startsWith("io.grpc.netty.shaded.io.netty.")) {
        return NETTY;
      }
      if (c.startsWith("io.grpc.")) {
        return GRPC;
      }
    }
    return OTHER;
  }

  /** {@code cls} without {@code io.sluice.}. */
  static String sluicePart(String cls) {
    int dollar = cls.indexOf('$');
    String outer = dollar < 0 ? cls : cls.substring(0, dollar);
    String named = BY_CLASS.get(outer);
    if (named != null) {
      return named;
    }
    if (outer.startsWith("bench.")) {
      return NOOP;
    }
    if (outer.startsWith("observability.")) {
      return METRICS;
    }
    if (outer.startsWith("transport.")) {
      return GUARD;
    }
    if (outer.startsWith("extproc.") || outer.startsWith("wire.")) {
      return STREAM;
    }
    return ADMISSION; // core (other), routing, config, feature, ...
  }
}
