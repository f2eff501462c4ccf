package io.sluice.core.estimate;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.core.io.JsonStringEncoder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Test;

/**
 * Measures the heuristic's bytes-per-token against BPE on the calibration corpus and prints the
 * figures for docs/estimation.md; asserts the ratios' sanity ranges. The cost of an estimate on the
 * same corpus is measured by JMH ({@code CalibrationCorpusBenchmark} in server/src/jmh/java), never
 * by a unit test.
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

  private static final TokenEstimator ESTIMATOR =
      TokenEstimator.uncached(EstimatorSettings.defaults());

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

  /** The body the JMH benchmark times: about 10 KB, and a gpt-4o body is counted by o200k BPE. */
  @Test
  void tenKilobyteChatBody_gpt4o_countedByO200kBpe() {
    String prose = Fixtures.text("calibration/prose-en.txt");
    String code = Fixtures.text("calibration/code-python.txt");
    byte[] body = chatBody("gpt-4o", prose, code, prose, code, prose, code, prose);

    TokenEstimate e =
        ESTIMATOR.estimate(RequestFormat.OPENAI_CHAT, body, new EstimateLimits(256, 4096));

    assertThat(body.length).isBetween(9_000, 12_000);
    assertThat(e.method()).isEqualTo("bpe:o200k_base");
    assertThat(e.inputTokens()).isPositive();
  }
}
