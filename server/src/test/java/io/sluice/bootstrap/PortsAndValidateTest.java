package io.sluice.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.config.ConfigLoader;
import io.sluice.config.SluiceConfig;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** The admin port binds apart from gRPC; validate warns about trusted headers left to clients. */
class PortsAndValidateTest {
  @TempDir Path dir;

  private static int freePort() throws Exception {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  @Test
  void adminAndGrpc_bindTheirOwnHostAndPort_envHostPortMoveOnlyTheAdminPort() throws Exception {
    int grpc = freePort();
    int admin = freePort();
    SluiceConfig c =
        Main.withEnv(
            ConfigLoader.parse(
                ConfigLoader.embeddedDefaultYaml()
                    .replace(
                        "shutdownGrace: 30s", "shutdownGrace: 0s\n  warmup: {enabled: false}")),
            Map.of(
                "GRPC_HOST",
                "127.0.0.1",
                "GRPC_PORT",
                Integer.toString(grpc),
                "HOST",
                "localhost",
                "PORT",
                Integer.toString(admin)));
    assertThat(c.server().adminHost()).isEqualTo("localhost");
    assertThat(c.server().grpcHost()).isEqualTo("127.0.0.1");
    try (SluiceServer s = SluiceServer.start(c)) {
      assertThat(s.grpcPort()).isEqualTo(grpc);
      assertThat(s.adminPort()).isEqualTo(admin);
      InetSocketAddress a = s.adminAddress();
      assertThat(a.getAddress().isLoopbackAddress()).isTrue();
      assertThat(a.getAddress().isAnyLocalAddress()).isFalse();
    }
  }

  @Test
  void validate_warnsAboutATrustedHeaderTheShippedConfigsDoNotStrip_andStillPasses()
      throws Exception {
    Path f = dir.resolve("p.yaml");
    Files.writeString(
        f,
        "pools: {p: {capacity: 10}}\nclasses: {c: {reservedShare: 1.0}}\n"
            + "signals: {tenant: [{header: x-org}, {header: x-tenant-id}]}\n");
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cl = new CommandLine(new Main());
    cl.setOut(new PrintWriter(out));
    cl.setErr(new PrintWriter(err));
    assertThat(cl.execute("validate", f.toString())).isZero();
    assertThat(out.toString()).contains("OK (1 pools");
    assertThat(err.toString())
        .contains("warning: signals.tenant[0]: header x-org is trusted but not stripped")
        .doesNotContain("x-tenant-id is trusted")
        .doesNotContain("set by none of the shipped Envoy configs");
  }

  @Test
  void validate_tenantSourcesNoShippedEnvoySets_warns(@org.junit.jupiter.api.io.TempDir Path dir)
      throws Exception {
    Path f = dir.resolve("p.yaml");
    Files.writeString(
        f,
        "pools: {p: {capacity: 10}}\nclasses: {c: {reservedShare: 1.0}}\n"
            + "tiers: {free: {maxInFlight: 4}}\n"
            + "signals: {tenant: [{metadata: x-sluice-tenant}]}\n");
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cl = new CommandLine(new Main());
    cl.setOut(new PrintWriter(out));
    cl.setErr(new PrintWriter(err));
    assertThat(cl.execute("validate", f.toString())).isZero();
    assertThat(err.toString())
        .contains(
            "warning: signals.tenant: metadata x-sluice-tenant is set by none of the shipped"
                + " Envoy configs")
        .contains("tenants.anonymousTier: free")
        .contains("{header: x-tenant-id}");
  }
}
