package io.sluice.core.estimate;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The cost of reading a streamed answer as Envoy hands it over (response_body chunks of a few
 * events each): usage extraction plus the output meter on every delta, per KB of SSE. One op reads
 * a whole answer of {@link #KB} KB, so the figure per KB is the score ÷ {@link #KB}.
 *
 * <p>{@code format}: OpenAI chat (one token or so per event, ~150 bytes of JSON around it: the
 * dearest case per KB) or Anthropic (a few tokens per {@code content_block_delta}). {@code meter}:
 * {@code bpe} (gpt-4o: o200k_base, each delta tokenized) or {@code bytes} (an unknown model, the
 * byte heuristic).
 *
 * <pre>
 * mvn -B -pl server -am -Pjmh package -DskipTests
 * java -jar server/target/benchmarks.jar UsageMeteringBenchmark
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class UsageMeteringBenchmark {
  /** Size of the answer one op reads. */
  public static final int KB = 16;

  private static final String[] WORDS = {
    " the",
    " shipment",
    " leaves",
    " Rotterdam",
    " on",
    " Friday",
    ";",
    " customs",
    " clearance",
    " takes",
    " two",
    " days",
    ",",
    " so",
    " plan",
    " for",
    " delivery",
    " by",
    " Wednesday",
    "."
  };

  @Param({"openai-chat", "anthropic"})
  public String format;

  @Param({"bpe", "bytes"})
  public String meter;

  private TokenEstimator estimator;
  private byte[][] chunks;

  @Setup
  public void setUp() {
    estimator = TokenEstimator.uncached(EstimatorSettings.defaults());
    StringBuilder sse = new StringBuilder();
    int i = 0;
    while (sse.length() < KB * 1024) {
      if (format.equals("openai-chat")) {
        sse.append("data: {\"id\":\"chatcmpl-9\",\"object\":\"chat.completion.chunk\",")
            .append("\"created\":1741569952,\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,")
            .append("\"delta\":{\"content\":\"")
            .append(WORDS[i++ % WORDS.length])
            .append("\"},\"finish_reason\":null}],\"usage\":null}\n\n");
      } else {
        sse.append("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",")
            .append("\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"");
        for (int k = 0; k < 4; k++) {
          sse.append(WORDS[i++ % WORDS.length]);
        }
        sse.append("\"}}\n\n");
      }
    }
    byte[] body = sse.toString().getBytes(StandardCharsets.UTF_8);
    int chunk = 512; // Envoy forwards what the upstream flushed: a few events per message
    chunks = new byte[(body.length + chunk - 1) / chunk][];
    for (int c = 0; c < chunks.length; c++) {
      int from = c * chunk;
      chunks[c] = java.util.Arrays.copyOfRange(body, from, Math.min(body.length, from + chunk));
    }
  }

  @Benchmark
  public long readAnswer() {
    OutputMeter m =
        meter.equals("bpe") ? estimator.meter("gpt-4o") : estimator.meter("llama-3-70b");
    UsageExtractor x = UsageExtractor.forResponse("text/event-stream", m);
    for (byte[] c : chunks) {
      x.onChunk(c, 0, c.length);
      x.outputSoFar(); // the session asks after every chunk
    }
    x.onEnd();
    return x.outputSoFar();
  }
}
