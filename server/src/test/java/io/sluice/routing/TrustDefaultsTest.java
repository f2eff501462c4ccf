package io.sluice.routing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.config.ConfigException;
import io.sluice.config.ConfigLoader;
import io.sluice.config.SluiceConfig;
import io.sluice.config.SluiceConfig.Signal;
import io.sluice.config.SluiceConfig.Source;
import io.sluice.config.TrustedHeaders;
import io.sluice.core.policy.Tenant;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Finding 4 of issue 13: the embedded default trusts nothing a client can set; an unknown tenant is
 * never better off than an anonymous one unless the operator says so; a client deadline only
 * tightens.
 */
class TrustDefaultsTest {

  @Test
  void embeddedDefault_readsClassAndPoolOnlyFromInitialMetadata_tenantAlsoFromTheClaimHeader() {
    SluiceConfig c = ConfigLoader.embeddedDefault();
    for (Signal s : List.of(Signal.CLASS, Signal.POOL)) {
      assertThat(c.signals().get(s)).as(s.key()).isNotEmpty();
      assertThat(c.signals().get(s)).as(s.key()).allMatch(src -> src instanceof Source.Metadata);
    }
    // the one header: every shipped Envoy config strips client copies and sets it from a JWT
    assertThat(c.signals().get(Signal.TENANT))
        .containsExactly(new Source.Metadata("x-sluice-tenant"), new Source.Header("x-tenant-id"));
    assertThat(TrustedHeaders.STRIPPED_BY_SHIPPED_ENVOY_CONFIGS).contains("x-tenant-id");
  }

  @Test
  void embeddedDefault_clientHeadersChooseNoTenantClassOrPool() {
    RequestResolver r = new RequestResolver(ConfigLoader.embeddedDefault());
    SignalRequest forged =
        new SignalRequest()
            .header("x-sluice-tenant", "victim")
            .header("x-sluice-class", "interactive")
            .header("x-sluice-pool", "default");
    forged.path = "/v1/completions"; // batch by route
    ResolvedRequest rr = r.resolve(forged, 0);
    assertThat(rr.tenant().id()).isEqualTo(Tenant.ANONYMOUS);
    assertThat(rr.requestClass().name()).isEqualTo("batch");

    SignalRequest trusted = new SignalRequest().metadata("x-sluice-tenant", "acme");
    assertThat(r.resolve(trusted, 0).tenant().id()).isEqualTo("acme");
  }

  @Test
  void embeddedDefault_unknownTenantIsNoBetterThanAnonymous() {
    SluiceConfig c = ConfigLoader.embeddedDefault();
    var anon = c.tiers().get(c.tenants().anonymousTier());
    var unknown = c.tiers().get(c.tenants().unknownTier());
    assertThat(unknown.weight()).isLessThanOrEqualTo(anon.weight());
    assertThat(unknown.maxInFlight()).isLessThanOrEqualTo(anon.maxInFlight());
  }

  private static final String TIERS =
      "pools: {p: {capacity: 100}}\nclasses: {c: {reservedShare: 1.0}}\n"
          + "tiers:\n"
          + "  free: {weight: 1, maxInFlight: 4, rpm: 60}\n"
          + "  gold: {weight: 4, maxInFlight: 64, rpm: 6000}\n";

  @ParameterizedTest
  @ValueSource(
      strings = {
        "weight: 2, maxInFlight: 4, rpm: 60",
        "weight: 1, maxInFlight: 8, rpm: 60",
        "weight: 1, maxInFlight: 0, rpm: 60", // 0 = no cap: better than 4
        "weight: 1, maxInFlight: 4, rpm: 61",
        "weight: 1, maxInFlight: 4", // no rpm budget at all
        "weight: 1, maxInFlight: 4, rpm: 60, inputTpm: 5", // anonymous has no tpm: fine
      })
  void unknownTierBetterThanAnonymous_isAConfigErrorNamingTheField(String tier) {
    String yaml =
        TIERS
            + "  odd: {"
            + tier
            + "}\n"
            + "tenants: {anonymousTier: free, unknown: admit, unknownTier: odd}\n";
    if (tier.endsWith("inputTpm: 5")) {
      assertThat(ConfigLoader.parse(yaml).tenants().unknownTier()).isEqualTo("odd");
      return;
    }
    assertThatThrownBy(() -> ConfigLoader.parse(yaml))
        .isInstanceOf(ConfigException.class)
        .satisfies(
            e ->
                assertThat(((ConfigException) e).errors())
                    .anySatisfy(
                        err ->
                            assertThat(err)
                                .startsWith("tenants.unknownTier: odd (expected:")
                                .contains("no better than anonymousTier free")
                                .contains("tenants.allowUnknownAboveAnonymous: true")));
    // The operator may say so explicitly; and a rejected unknown tenant never gets the tier.
    assertThat(
            ConfigLoader.parse(
                    yaml.replace(
                        "unknownTier: odd}",
                        "unknownTier: odd," + " allowUnknownAboveAnonymous: true}"))
                .tenants()
                .allowUnknownAboveAnonymous())
        .isTrue();
    ConfigLoader.parse(yaml.replace("unknown: admit", "unknown: reject"));
  }

  @Test
  void unknownTierDefaultsToAnonymousTier() {
    SluiceConfig c = ConfigLoader.parse(TIERS + "tenants: {anonymousTier: free, unknown: admit}\n");
    assertThat(c.tenants().unknownTier()).isEqualTo("free");
  }

  @Test
  void clientDeadline_onlyTightensTheClassDeadline_neverExtendsIt() {
    SluiceConfig c = ConfigLoader.embeddedDefault();
    RequestResolver r = new RequestResolver(c);
    long now = 1_000_000_000L;
    long classDeadline = c.classes().get("interactive").deadline().toNanos();
    assertThat(Duration.ofNanos(classDeadline)).isEqualTo(Duration.ofSeconds(30));
    for (String v :
        new String[] {
          "60000", // longer than the class's 30 s
          "30001",
          "9223372036854775807", // Long.MAX_VALUE ms
          "9223372036855", // ms * 1e6 overflows
          "18446744073710", // ms * 1e6 wraps to 448384 ns
          "-5",
          "0",
          "abc",
          "1e9",
        }) {
      ResolvedRequest rr = r.resolve(new SignalRequest().header("x-sluice-timeout-ms", v), now);
      assertThat(rr.deadlineNanos() - now).as(v).isEqualTo(classDeadline);
    }
    ResolvedRequest tighter =
        r.resolve(new SignalRequest().header("x-sluice-timeout-ms", "1500"), now);
    assertThat(tighter.deadlineNanos() - now).isEqualTo(1_500_000_000L);
  }

  @Test
  void strippedHeaderList_coversEveryHeaderTheShippedConfigsRemove() {
    assertThat(TrustedHeaders.STRIPPED_BY_SHIPPED_ENVOY_CONFIGS)
        .contains("x-tenant-id", "x-sluice-tenant", "x-sluice-class", "x-sluice-pool")
        .allMatch(h -> h.equals(h.toLowerCase(java.util.Locale.ROOT)));
  }

  @Test
  void warnings_trustedHeaderNotStrippedByTheShippedConfigs() {
    String base = "pools: {p: {capacity: 100}}\nclasses: {c: {reservedShare: 1.0}}\n";
    SluiceConfig c =
        ConfigLoader.parse(
            base
                + "signals:\n"
                + "  tenant: [{metadata: x-sluice-tenant}, {header: X-Org}]\n"
                + "  class: [{header: x-sluice-class}]\n"
                + "  deadlineMs: [{header: x-client-deadline}]\n"
                + "  operationId: [{header: idempotency-key}]\n");
    assertThat(TrustedHeaders.warnings(c))
        .singleElement()
        .asString()
        .startsWith("signals.tenant[1]: header x-org is trusted")
        .contains("not stripped");
    assertThat(TrustedHeaders.warnings(ConfigLoader.embeddedDefault())).isEmpty();
  }

  @Test
  void tenantSignals_warnWhenNoShippedEnvoyConfigSetsATenantSource() {
    String base = "pools: {p: {capacity: 100}}\nclasses: {c: {reservedShare: 1.0}}\n";
    SluiceConfig metadataOnly =
        ConfigLoader.parse(base + "signals: {tenant: [{metadata: x-sluice-tenant}]}\n");
    assertThat(io.sluice.config.TenantSignals.warnings(metadataOnly))
        .singleElement()
        .asString()
        .startsWith("signals.tenant: metadata x-sluice-tenant is set by none of the shipped")
        .contains("every request is the anonymous tenant");
    // no tenant source at all: single-tenant on purpose, nothing to warn about
    assertThat(io.sluice.config.TenantSignals.warnings(ConfigLoader.parse(base))).isEmpty();
    SluiceConfig jwt =
        ConfigLoader.parse(
            base
                + "signals: {tenant: [{dynamicMetadata: {namespace: envoy.filters.http.jwt_authn,"
                + " path: [jwt_payload, tenant]}}]}\n");
    assertThat(io.sluice.config.TenantSignals.warnings(jwt)).isEmpty();
    assertThat(io.sluice.config.TenantSignals.warnings(ConfigLoader.embeddedDefault())).isEmpty();
  }

  @Test
  void embeddedDefault_noTenant_isNotCapped_andAMadeUpIdIsNoUpgrade() {
    SluiceConfig c = ConfigLoader.embeddedDefault();
    var anon = c.tiers().get(c.tenants().anonymousTier());
    assertThat(anon.maxInFlight()).isZero();
    assertThat(c.tenants().unknownTier()).isEqualTo(c.tenants().anonymousTier());
    RequestResolver r = new RequestResolver(c);
    assertThat(r.resolve(new SignalRequest(), 0).tenant().id()).isEqualTo(Tenant.ANONYMOUS);
    assertThat(r.resolve(new SignalRequest().header("x-tenant-id", "acme"), 0).tenant().id())
        .isEqualTo("acme");
    // the protection still bites: cap the anonymous tenant and leave unknown ids uncapped, and a
    // made-up id would be an upgrade
    String capped =
        ConfigLoader.embeddedDefaultYaml().replace("anonymousTier: default", "anonymousTier: free");
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> ConfigLoader.parse(capped))
        .isInstanceOf(io.sluice.config.ConfigException.class)
        .hasMessageContaining("tenants.unknownTier")
        .hasMessageContaining("maxInFlight unlimited > 4");
  }

  @Test
  void capRefusal_ofTheAnonymousTenant_namesTheSetting() {
    var free = io.sluice.core.policy.TierPolicy.builder("free").maxInFlight(4).build();
    assertThat(new io.sluice.core.policy.Tenant("anonymous", free).capRefusal("tenant has 4"))
        .startsWith("anonymous tenant: the request carried no tenant")
        .contains("tenants.anonymousTier: free, tiers.free.maxInFlight: 4")
        .endsWith(": tenant has 4");
    assertThat(new io.sluice.core.policy.Tenant("acme", free).capRefusal("tenant has 4"))
        .isEqualTo("tenant has 4");
  }
}
