package io.sluice.core.estimate;

import io.sluice.harness.LlmStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The CPU time and the bytes allocated of the floor's 1.9 KB chat body read alone ({@link
 * ChatScan#read}: its bytes walked once, the scan's members and the prompt tallied with the byte
 * heuristic), without the rest of the estimate ({@link BodyReadCpu} times the whole estimate), on
 * this thread, in a plain loop (no JMH harness). The same source compiled against two jars compares
 * them, run alternately.
 *
 * <pre>
 * javac -proc:none -d /tmp/chat-new -cp server/target/benchmarks.jar \
 *   server/src/jmh/java/io/sluice/core/estimate/ChatBodyReadCpu.java
 * java -cp /tmp/chat-new:server/target/benchmarks.jar io.sluice.core.estimate.ChatBodyReadCpu
 * </pre>
 *
 * Prints the CPU nanoseconds and bytes per read of five rounds of 400,000 after 2,000,000 (another
 * count of rounds: the first argument; two counts under {@code perf stat -e instructions:u} give
 * the instructions per read, which hold under load).
 */
public final class ChatBodyReadCpu {
  private ChatBodyReadCpu() {}

  public static void main(String[] args) {
    EstimatorSettings settings = EstimatorSettings.defaults();
    ModelEncodings encodings = new ModelEncodings();
    TokenCountCache counts = TokenCountCache.disabled();
    byte[] chat = LlmStream.CHAT_BODY.getBytes(StandardCharsets.UTF_8);
    com.fasterxml.jackson.core.StreamReadConstraints limits =
        TokenEstimator.newJsonFactory(settings.maxJsonDepth()).streamReadConstraints();
    com.sun.management.ThreadMXBean mx =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long sink = 0;
    for (int i = 0; i < 2_000_000; i++) {
      sink += read(chat, settings, encodings, counts, limits);
    }
    int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 5;
    long[] cpu = new long[rounds];
    long[] bytes = new long[rounds];
    for (int k = 0; k < rounds; k++) {
      long before = mx.getCurrentThreadCpuTime();
      long allocated = mx.getCurrentThreadAllocatedBytes();
      for (int i = 0; i < 400_000; i++) {
        sink += read(chat, settings, encodings, counts, limits);
      }
      cpu[k] = (mx.getCurrentThreadCpuTime() - before) / 400_000;
      bytes[k] = (mx.getCurrentThreadAllocatedBytes() - allocated) / 400_000;
    }
    System.out.println("chatBodyRead cpu ns/op (rounds of 400k): " + Arrays.toString(cpu));
    System.out.println("chatBodyRead allocated B/op (rounds of 400k): " + Arrays.toString(bytes));
    System.out.println(sink == 42 ? "(sink)" : "");
  }

  private static long read(
      byte[] chat,
      EstimatorSettings settings,
      ModelEncodings encodings,
      TokenCountCache counts,
      com.fasterxml.jackson.core.StreamReadConstraints limits) {
    ScanWalk on = new ScanWalk(RequestFormat.OPENAI_CHAT, encodings, counts, settings);
    BodyScan scan = ChatScan.read(on, chat, 0, chat.length, settings, limits);
    if (scan == null) {
      throw new IllegalStateException("the floor's chat body is no longer read from its bytes");
    }
    TokenTally t = on.result(scan.model);
    return t == null ? 0 : t.tokens();
  }
}
