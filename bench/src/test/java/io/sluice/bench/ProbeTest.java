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

  @Test
  void probe_noTenantEightAtOnce_embeddedDefault_admitsAllUnderTheAnonymousTenant()
      throws Exception {
    try (SluiceServer server = SluiceServer.start(Policies.embeddedDefaultOnFreePorts())) {
      BenchCliTest.Run r =
          BenchCliTest.run(
              "probe",
              "--target",
              "127.0.0.1:" + server.grpcPort(),
              "--no-tenant",
              "--concurrency",
              "8",
              "--count",
              "8",
              "--upstream-delay-ms",
              "500");
      assertThat(r.code()).as(r.err()).isZero();
      assertThat(r.out()).contains("tenant (none: anonymous)", "8 at once", "summary: admitted 8");
      assertThat(r.out()).contains("tenant=anonymous");
    }
  }

  @Test
  void probe_noTenantEightAtOnce_anonymousCappedAtFour_refusalNamesTheSetting() throws Exception {
    String yaml =
        ConfigLoader.embeddedDefaultYaml()
            .replace("host: 0.0.0.0, port: 8081", "host: 127.0.0.1, port: 0")
            .replace("host: 0.0.0.0, port: 8080", "host: 127.0.0.1, port: 0")
            .replace("anonymousTier: default", "anonymousTier: free")
            .replace("unknownTier: default", "unknownTier: free");
    try (SluiceServer server = SluiceServer.start(ConfigLoader.parse(yaml))) {
      BenchCliTest.Run r =
          BenchCliTest.run(
              "probe",
              "--target",
              "127.0.0.1:" + server.grpcPort(),
              "--no-tenant",
              "--concurrency",
              "8",
              "--count",
              "8",
              "--upstream-delay-ms",
              "1000");
      assertThat(r.code()).as(r.err()).isZero();
      assertThat(r.out()).contains("summary: admitted 4, refused tenant_concurrency 4");
      assertThat(r.out())
          .contains(
              "anonymous tenant: the request carried no tenant",
              "tenants.anonymousTier: free, tiers.free.maxInFlight: 4");
    }
  }

  @Test
  void probe_tenantHeader_isSentAsAHeader() throws Exception {
    try (SluiceServer server = SluiceServer.start(Policies.embeddedDefaultOnFreePorts())) {
      BenchCliTest.Run r =
          BenchCliTest.run(
              "probe",
              "--target",
              "127.0.0.1:" + server.grpcPort(),
              "--tenant",
              "acme",
              "--tenant-header",
              "x-tenant-id");
      assertThat(r.code()).as(r.err()).isZero();
      assertThat(r.out()).contains("tenant acme (header x-tenant-id)", "tenant=acme");
    }
  }

  @Test
  void probe_badConcurrency_isAUsageError() {
    BenchCliTest.Run r = BenchCliTest.run("probe", "--concurrency", "0");
    assertThat(r.code()).isEqualTo(picocli.CommandLine.ExitCode.USAGE);
    assertThat(r.err()).contains("--concurrency: 0 (expected: 1..1000)");
  }
}
