package io.sluice.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The coldstart wiring: fresh server JVMs come up, serve the timed streams, report. No timing. */
class ColdStartSmokeTest {
  @Test
  void oneStartPerMode_admitsTheTimedStreams_andTabulates() throws Exception {
    ColdStart c = new ColdStart();
    c.runs = 1;
    c.streams = 2;
    c.clientWarmStreams = 10;
    c.warmReferenceAfter = 5;
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    List<ColdStart.Run> runs = c.run(new PrintStream(buf, true, StandardCharsets.UTF_8));
    assertThat(runs).extracting(ColdStart.Run::mode).containsExactly("off", "on");
    for (ColdStart.Run r : runs) {
      assertThat(r.admitted()).as(r.mode()).isEqualTo(2);
      assertThat(r.readyNanos()).isPositive();
      assertThat(r.firstDecisionNanos()).isPositive();
    }
    assertThat(ColdStart.table(runs, 1, 2, "512m")).contains("| off | ").contains("| on | ");
    assertThat(ColdStart.median(new long[] {3, 1, 2})).isEqualTo(2.0);
    assertThat(ColdStart.median(new long[] {4, 1, 2, 3})).isEqualTo(2.5);
  }
}
