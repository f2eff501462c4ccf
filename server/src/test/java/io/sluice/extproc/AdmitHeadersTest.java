package io.sluice.extproc;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.config.SluiceConfig;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The common admit's encoded headers are the ones the general map path writes, in its order. */
class AdmitHeadersTest {

  @Test
  void digits_areLongToString() {
    SplittableRandom r = new SplittableRandom(7);
    List<Long> cases =
        new ArrayList<>(List.of(0L, 1L, 9L, 10L, 99L, 100L, -1L, -10L, Long.MAX_VALUE));
    cases.add(Long.MIN_VALUE);
    for (int i = 0; i < 5_000; i++) {
      cases.add(r.nextLong() >> r.nextInt(64));
    }
    for (long v : cases) {
      assertThat(new String(AdmitHeaders.digits(v), StandardCharsets.US_ASCII))
          .isEqualTo(Long.toString(v));
    }
  }

  @Test
  void headers_matchTheMapPath_forEveryConfig() {
    for (int bits = 0; bits < 16; bits++) {
      SluiceConfig.Responses cfg =
          new SluiceConfig.Responses(
              (bits & 1) != 0,
              (bits & 2) != 0,
              (bits & 4) != 0 ? "x-request-deadline-ms" : "",
              (bits & 8) != 0);
      AdmitHeaders h = AdmitHeaders.of(cfg);
      for (boolean estimated : new boolean[] {false, true}) {
        for (boolean degrade : new boolean[] {false, true}) {
          long in = 1234;
          long out = -5;
          long work = 987_654_321L;
          long left = 30_000;
          Map<String, String> expected = new LinkedHashMap<>();
          if (cfg.decisionHeader()) {
            expected.put("x-sluice-decision", degrade ? "degrade" : "admit");
          }
          if (cfg.estimateHeader() && estimated) {
            expected.put("x-sluice-estimate", "input=" + in + ";output=" + out + ";work=" + work);
          }
          if (!cfg.deadlineHeader().isEmpty()) {
            expected.put(cfg.deadlineHeader(), Long.toString(left));
          }
          if (cfg.upstreamTimeout()) {
            expected.put("x-envoy-upstream-rq-timeout-ms", Long.toString(left));
          }
          byte[][] keys = h.keys(estimated);
          byte[][] values = h.values(degrade, estimated, in, out, work, left);
          Map<String, String> got = new LinkedHashMap<>();
          for (int i = 0; i < keys.length; i++) {
            got.put(
                new String(keys[i], StandardCharsets.UTF_8),
                new String(values[i], StandardCharsets.UTF_8));
          }
          assertThat(got).containsExactlyEntriesOf(expected);
          assertThat(keys).isEqualTo(HeaderKeys.keys(expected));
          assertThat(values).isEqualTo(HeaderKeys.values(expected));
        }
      }
    }
  }
}
