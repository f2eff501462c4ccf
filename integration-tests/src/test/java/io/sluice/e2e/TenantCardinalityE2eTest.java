package io.sluice.e2e;

import static io.sluice.e2e.SluiceEnvoyHarness.chatBody;
import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.emulator.HttpRequest;
import io.sluice.emulator.HttpResult;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Label cardinality stays bounded whatever tenants send (docs/metrics.md, "Conventions"): 10,000
 * distinct tenant ids through Sluice add no series to {@code /metrics} beyond those of the first
 * hundred (tenants are counted by tier, never by id), and no tenant id appears in the scrape.
 */
@Timeout(240)
class TenantCardinalityE2eTest {
  private SluiceEnvoyHarness h;

  @AfterEach
  void tearDown() {
    if (h != null) {
      h.close();
    }
  }

  private void sendTenants(int from, int to) {
    List<CompletableFuture<HttpResult>> batch = new ArrayList<>();
    for (int i = from; i < to; i++) {
      batch.add(
          h.sendAsync(
              HttpRequest.post(SluiceEnvoyHarness.CHAT, chatBody(20, false))
                  .routeGrpcInitialMetadata("x-sluice-tenant", "tenant-" + i)
                  .build()));
      if (batch.size() == 32) {
        batch.forEach(SluiceEnvoyHarness::result);
        batch.clear();
      }
    }
    batch.forEach(SluiceEnvoyHarness::result);
  }

  private List<String> series() throws Exception {
    String scrape =
        java.net.http.HttpClient.newHttpClient()
            .send(
                java.net.http.HttpRequest.newBuilder(
                        java.net.URI.create(
                            "http://127.0.0.1:" + h.server.adminPort() + "/metrics"))
                    .build(),
                java.net.http.HttpResponse.BodyHandlers.ofString())
            .body();
    return scrape.lines().filter(l -> !l.startsWith("#") && !l.isBlank()).toList();
  }

  @Test
  void tenThousandDistinctTenants_keepTheSeriesCountBounded() throws Exception {
    h = SluiceEnvoyHarness.start(Policy.base());
    sendTenants(0, 100);
    int after100 = series().size();
    sendTenants(100, 10_000);
    List<String> after = series();
    assertThat(after).noneMatch(l -> l.contains("tenant-"));
    // JVM meters may add a handful (a GC pool, a thread state); tenants add none
    assertThat(after.size()).isLessThanOrEqualTo(after100 + 10);
  }
}
