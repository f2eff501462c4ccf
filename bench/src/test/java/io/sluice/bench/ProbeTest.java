package io.sluice.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.bootstrap.SluiceServer;
import io.sluice.config.ConfigLoader;
import java.net.ServerSocket;
import org.junit.jupiter.api.Test;

/** {@code sluice-bench probe} against a Sluice started in the test (loopback only). */
class ProbeTest {

  @Test
  void probe_embeddedDefault_admitsAndPrintsTheDecision() throws Exception {
    try (SluiceServer server = SluiceServer.start(Policies.embeddedDefaultOnFreePorts())) {
      BenchCliTest.Run r =
          BenchCliTest.run(
              "probe",
              "--target",
              "127.0.0.1:" + server.grpcPort(),
              "--tenant",
              "acme",
              "--class",
              "interactive",
              "--count",
              "3");
      assertThat(r.code()).as(r.err()).isZero();
      assertThat(r.out())
          .contains(
              "probe 127.0.0.1:" + server.grpcPort(),
              "tenant acme",
              "class interactive",
              "model gpt-4o-mini");
      assertThat(r.out().lines().filter(l -> l.matches("\\[\\d] admitted +status 200 .*")))
          .hasSize(3);
      assertThat(r.out()).contains("reason admitted", "decision=admit", "class=interactive");
    }
  }

  @Test
  void probe_refusingPolicy_printsStatusReasonAndRetryAfter() throws Exception {
    try (SluiceServer server = SluiceServer.start(ConfigLoader.parse(Floor.REJECT_POLICY))) {
      BenchCliTest.Run r = BenchCliTest.run("probe", "--target", "127.0.0.1:" + server.grpcPort());
      assertThat(r.code()).as(r.err()).isZero(); // a refusal is an answer
      String line = r.out().lines().filter(l -> l.startsWith("refused")).findFirst().orElseThrow();
      assertThat(line).containsPattern("status (429|503)").containsPattern("retry-after \\d+ s");
      assertThat(line).doesNotContain("reason -").contains("decision=reject");
      assertThat(r.out()).contains("body: {\"error\"");
    }
  }

  @Test
  void probe_nothingListening_exitsNonZeroWithAClearMessage() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort();
    }
    BenchCliTest.Run r = BenchCliTest.run("probe", "--target", "127.0.0.1:" + port);
    assertThat(r.code()).isEqualTo(Probe.UNREACHABLE);
    assertThat(r.err())
        .contains(
            "cannot reach Sluice at 127.0.0.1:" + port, "UNAVAILABLE", "Is the server running");
    assertThat(r.out()).doesNotContain("admitted", "refused");
  }

  @Test
  void probe_badCount_isAUsageError() {
    BenchCliTest.Run r = BenchCliTest.run("probe", "--count", "0");
    assertThat(r.code()).isEqualTo(picocli.CommandLine.ExitCode.USAGE);
    assertThat(r.err()).contains("--count: 0 (expected: 1..10000)");
  }
}
