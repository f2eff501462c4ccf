package io.sluice.core.estimate;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.core.io.JsonStringEncoder;
import com.knuddels.jtokkit.api.Encoding;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Test;

/**
 * Measures the heuristic's bytes-per-token against BPE on the calibration corpus, and the cost of
 * one estimate. Prints figures for docs/estimation.md; asserts only sanity ranges, never times.
 */
class EstimatorCalibrationTest {
  private static final List<String> CORPUS =
      List.of(
          "prose-en.txt",
          "prose-de.txt",
          "prose-zh.txt",
          "code-java.txt",
          "code-python.txt",
          "json-data.txt",
          "markdown-doc.txt");

  private static final TokenEstimator ESTIMATOR = new TokenEstimator(EstimatorSettings.defaults());

  static byte[] chatBody(String model, String... userTexts) {
    StringBuilder sb = new StringBuilder("{\"model\":\"").append(model).append("\",\"messages\":[");
    for (int i = 0; i < userTexts.length; i++) {
      if (i > 0) {
        sb.append(',');
      }
      sb.append("{\"role\":\"")
          .append(i % 2 == 0 ? "user" : "assistant")
          .append("\",\"content\":\"")
          .append(JsonStringEncoder.getInstance().quoteAsString(userTexts[i]))
          .append("\"}");
    }
    return sb.append("],\"max_tokens\":500}").toString().getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void calibration_corpus_bytesPerTokenNearDefault() throws Exception {
    long totalBytes = 0;
    long totalO200k = 0;
    long totalCl100k = 0;
    for (String name : CORPUS) {
      byte[] body = chatBody("gpt-4o", Fixtures.text("calibration/" + name));
      TokenTally o200k = ESTIMATOR.tally(RequestFormat.OPENAI_CHAT, body, ModelEncodings.o200k());
      TokenTally cl100k = ESTIMATOR.tally(RequestFormat.OPENAI_CHAT, body, ModelEncodings.cl100k());
      long bytes = o200k.textBytes();
      System.out.printf(
          Locale.ROOT,
          "calibration %-18s bytes=%5d o200k=%4d (%.2f B/tok) cl100k=%4d (%.2f B/tok)%n",
          name,
          bytes,
          o200k.textTokens(),
          (double) bytes / o200k.textTokens(),
          cl100k.textTokens(),
          (double) bytes / cl100k.textTokens());
      totalBytes += bytes;
      totalO200k += o200k.textTokens();
      totalCl100k += cl100k.textTokens();
    }
    double o200kRatio = (double) totalBytes / totalO200k;
    double cl100kRatio = (double) totalBytes / totalCl100k;
    System.out.printf(
        Locale.ROOT,
        "calibration TOTAL bytes=%d o200k=%d (%.2f B/tok) cl100k=%d (%.2f B/tok)%n",
        totalBytes,
        totalO200k,
        o200kRatio,
        totalCl100k,
        cl100kRatio);

    assertThat(o200kRatio).isBetween(3.0, 5.5);
    assertThat(cl100kRatio).isBetween(3.0, 5.5);
  }

  @Test
  void performance_tenKilobyteChatBody_printsMicrosPerEstimate() {
    String prose = Fixtures.text("calibration/prose-en.txt");
    String code = Fixtures.text("calibration/code-python.txt");
    byte[] bpeBody = chatBody("gpt-4o", prose, code, prose, code, prose, code, prose);
    byte[] cl100kBody = chatBody("gpt-4-turbo", prose, code, prose, code, prose, code, prose);
    byte[] heuristicBody =
        chatBody("claude-sonnet-4-5", prose, code, prose, code, prose, code, prose);
    EstimateLimits limits = new EstimateLimits(256, 4096);

    double bpeMicros = microsPerEstimate(bpeBody, limits);
    double cl100kMicros = microsPerEstimate(cl100kBody, limits);
    double heuristicMicros = microsPerEstimate(heuristicBody, limits);
    TokenEstimate e = ESTIMATOR.estimate(RequestFormat.OPENAI_CHAT, bpeBody, limits);
    System.out.printf(
        Locale.ROOT,
        "performance body=%d bytes inputTokens=%d o200k=%.1f us/estimate cl100k=%.1f us/estimate"
            + " heuristic=%.1f us/estimate%n",
        bpeBody.length,
        e.inputTokens(),
        bpeMicros,
        cl100kMicros,
        heuristicMicros);

    assertThat(bpeBody.length).isBetween(9_000, 12_000);
    assertThat(e.method()).isEqualTo("bpe:o200k_base");
  }

  @Test
  void performance_tokenizer_printsCharsPerMillisecond() {
    String prose = Fixtures.text("calibration/prose-en.txt").repeat(40);
    Encoding o200k = ModelEncodings.o200k();
    for (int i = 0; i < 20; i++) {
      o200k.countTokensOrdinary(prose);
    }
    int rounds = 40;
    long start = System.nanoTime();
    long tokens = 0;
    for (int i = 0; i < rounds; i++) {
      tokens += o200k.countTokensOrdinary(prose);
    }
    double millis = (System.nanoTime() - start) / 1e6;
    System.out.printf(
        Locale.ROOT,
        "performance o200k tokenizer: %.0f chars/ms (%d chars per round)%n",
        prose.length() * rounds / millis,
        prose.length());

    assertThat(tokens).isPositive();
  }

  private static double microsPerEstimate(byte[] body, EstimateLimits limits) {
    long sink = 0;
    for (int i = 0; i < 3_000; i++) {
      sink += ESTIMATOR.estimate(RequestFormat.AUTO, body, limits).inputTokens();
    }
    int rounds = 3_000;
    long start = System.nanoTime();
    for (int i = 0; i < rounds; i++) {
      sink += ESTIMATOR.estimate(RequestFormat.AUTO, body, limits).inputTokens();
    }
    long elapsed = System.nanoTime() - start;
    assertThat(sink).isPositive();
    return elapsed / 1e3 / rounds;
  }
}
