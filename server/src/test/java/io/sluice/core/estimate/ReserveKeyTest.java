package io.sluice.core.estimate;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * {@link ReserveKey#of} hands out the last key asked again only for the same names: every key it
 * gives equals, field by field and by hash, the key built from the names asked; and the learned
 * reserves of requests whose keys alternate stay apart.
 */
class ReserveKeyTest {
  private static final String[] POOLS = {"gpu", "cpu"};
  private static final String[] MODELS = {"m1", "m2"};
  private static final String[] SCOPES = {"chat", "class:batch"};
  private static final double[] QUANTILES = {0.9, 0.5, 0.0, -0.0};
  private static final String[] TENANTS = {"", "acme", "globex"};

  @Test
  void of_givesTheKeyOfTheNamesAsked_whateverWasAskedBefore() {
    java.util.Random r = new java.util.Random(20261206);
    ReserveKey previous = null;
    for (int i = 0; i < 5_000; i++) {
      String pool = POOLS[r.nextInt(2)];
      String model = new String(MODELS[r.nextInt(2)]); // a fresh instance, as a body's model is
      String scope = SCOPES[r.nextInt(2)];
      double q = QUANTILES[r.nextInt(4)];
      String tenant = new String(TENANTS[r.nextInt(3)]);
      ReserveKey k = ReserveKey.of(pool, model, scope, q, tenant);
      ReserveKey built = new ReserveKey(pool, model, scope, q, tenant);
      assertThat(k).isEqualTo(built).hasSameHashCodeAs(built);
      assertThat(k.pool()).isEqualTo(pool);
      assertThat(k.model()).isEqualTo(model);
      assertThat(k.scope()).isEqualTo(scope);
      assertThat(Double.compare(k.quantile(), q)).isZero();
      assertThat(k.tenant()).isEqualTo(tenant);
      if (previous != null && previous.equals(built)) {
        assertThat(k).isSameAs(previous); // asked again: not built again
      }
      previous = k;
    }
  }

  @Test
  void reservesOfAlternatingKeys_learnEachKeyApart() {
    OutputReserves reserves = new OutputReserves(OutputReserves.Settings.DEFAULTS);
    Map<String, Integer> expected = new HashMap<>();
    java.util.Random r = new java.util.Random(34);
    for (int i = 0; i < 2_000; i++) {
      String model = MODELS[r.nextInt(2)];
      String scope = SCOPES[r.nextInt(2)];
      double q = QUANTILES[r.nextInt(2)];
      String tenant = TENANTS[1 + r.nextInt(2)];
      reserves.reserve("gpu", model, scope, tenant, q, 4096, 1024, 1, 4096);
      reserves.record("gpu", model, scope, tenant, q, 4096, 1, 100 + r.nextInt(100));
      expected.merge(model + "/" + scope + "/" + q + "/" + tenant, 1, Integer::sum);
    }
    Map<String, Long> learned = new HashMap<>();
    for (OutputReserves.KeyView v : reserves.top(1_000)) {
      if (!v.tenant().isEmpty()) {
        String name = v.model() + "/" + v.scope() + "/" + v.quantile() + "/" + v.tenant();
        learned.put(name, v.samples());
      }
    }
    assertThat(learned).hasSize(expected.size());
    expected.forEach(
        (name, n) -> {
          assertThat(learned.get(name)).as(name).isEqualTo((long) n);
        });
  }
}
