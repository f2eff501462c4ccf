package io.sluice.routing;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.config.ConfigLoader;
import io.sluice.config.SluiceConfig;
import io.sluice.core.policy.Tenant;
import org.junit.jupiter.api.Test;

/**
 * An unknown tenant resolves to its own id in the unknown tier; the resolver reuses the last
 * unknown tenant's {@link Tenant} for a request of the same tenant, and only then.
 */
class UnknownTenantTest {
  private static ResolvedRequest resolve(RequestResolver r, String tenant) {
    return r.resolve(new SignalRequest().metadata("x-sluice-tenant", tenant), 0);
  }

  @Test
  void theSameUnknownTenant_reusesItsTenant_anotherGetsItsOwn() {
    SluiceConfig c = ConfigLoader.embeddedDefault();
    RequestResolver r = new RequestResolver(c);
    String unknownTier = c.tenants().unknownTier();

    Tenant acme = resolve(r, "acme").tenant();
    assertThat(acme.id()).isEqualTo("acme");
    assertThat(acme.tier().name()).isEqualTo(unknownTier);
    assertThat(resolve(r, "acme").tenant()).isSameAs(acme);

    Tenant globex = resolve(r, "globex").tenant();
    assertThat(globex.id()).isEqualTo("globex");
    assertThat(globex.tier().name()).isEqualTo(unknownTier);
    assertThat(resolve(r, "acme").tenant()).isNotSameAs(acme).isEqualTo(acme);

    // an empty tenant is anonymous, never the unknown tier's first (id-less) Tenant
    assertThat(r.resolve(new SignalRequest(), 0).tenant().id()).isEqualTo(Tenant.ANONYMOUS);
  }

  @Test
  void aKnownTenant_getsItsTier_noneKnown_everyIdIsUnknown() {
    String yaml = ConfigLoader.embeddedDefaultYaml();
    String withKnown = yaml.replace("  known: {}", "  known: {acme: {tier: enterprise}}");
    assertThat(withKnown).isNotEqualTo(yaml);
    RequestResolver known = new RequestResolver(ConfigLoader.parse(withKnown));
    assertThat(resolve(known, "acme").tenant().tier().name()).isEqualTo("enterprise");
    assertThat(resolve(known, "globex").tenant().tier().name()).isEqualTo("default");
    RequestResolver none = new RequestResolver(ConfigLoader.parse(yaml));
    assertThat(resolve(none, "acme").tenant().tier().name()).isEqualTo("default");
  }
}
