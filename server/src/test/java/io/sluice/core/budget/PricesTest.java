package io.sluice.core.budget;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Prices: exact nano-unit costs, effective dates, unknown models. */
class PricesTest {
  private static final long USD = 1_000_000_000L;
  private static final Instant JAN = Instant.parse("2026-01-01T00:00:00Z");
  private static final Instant JUN = Instant.parse("2026-06-01T00:00:00Z");

  @Test
  void cost_perPart_roundedUpToANanoUnit() {
    // $2.50 / 1M input, $10 / 1M output, $1.25 / 1M cached input
    Price p = new Price(JAN, 2_500_000_000L, 10 * USD, 1_250_000_000L);

    assertThat(p.cost(new TokenUse(1_000_000, 0, 0))).isEqualTo(2_500_000_000L);
    assertThat(p.cost(new TokenUse(1000, 500, 400)))
        .isEqualTo(600 * 2500 + 500 * 10_000 + 400 * 1250);
    assertThat(p.cost(new TokenUse(1, 0, 0))).isEqualTo(2500);
    // $0.000001 per 1M: a fraction of a nano-unit per token, rounded up per part
    assertThat(new Price(JAN, 1000, 0, 0).cost(new TokenUse(1, 0, 0))).isEqualTo(1);
  }

  @Test
  void cost_hugeProducts_doNotOverflow() {
    Price p = new Price(JAN, 600 * USD, 600 * USD, 0);
    assertThat(p.cost(new TokenUse(100_000_000, 0, 0))).isEqualTo(60_000 * USD);
    assertThat(new Price(JAN, Long.MAX_VALUE, 0, 0).cost(new TokenUse(Long.MAX_VALUE / 2, 0, 0)))
        .isEqualTo(Long.MAX_VALUE);
  }

  @Test
  void cachedInput_isPartOfInput_neverMore() {
    TokenUse u = new TokenUse(100, 10, 500);
    assertThat(u.cachedInput()).isEqualTo(100);
    assertThat(u.uncachedInput()).isZero();
  }

  @Test
  void at_theLatestPriceInEffect() {
    Price old = new Price(JAN, 3 * USD, 15 * USD, 0);
    Price cut = new Price(JUN, 2 * USD, 8 * USD, 0);
    Prices t = new Prices(Map.of("gpt-x", List.of(cut, old)), null, Prices.Unknown.REFUSE);

    assertThat(t.at("gpt-x", JAN.minusSeconds(1))).isNull();
    assertThat(t.at("gpt-x", JAN)).isEqualTo(old);
    assertThat(t.at("gpt-x", JUN.minusMillis(1))).isEqualTo(old);
    assertThat(t.at("gpt-x", JUN)).isEqualTo(cut);
  }

  @Test
  void unknownModel_defaultPriceOrRefused() {
    Price d = new Price(JAN, USD, USD, 0);
    assertThat(new Prices(Map.of(), d, Prices.Unknown.DEFAULT).at("other", JUN)).isEqualTo(d);
    assertThat(new Prices(Map.of(), d, Prices.Unknown.REFUSE).at("other", JUN)).isNull();
    assertThat(new Prices(Map.of(), d, Prices.Unknown.DEFAULT).at(null, JUN)).isEqualTo(d);
    assertThatThrownBy(() -> new Prices(Map.of(), null, Prices.Unknown.DEFAULT))
        .hasMessageContaining("prices.default");
  }

  @Test
  void twoPricesFromTheSameInstant_anErrorNamingTheModel() {
    Price a = new Price(JAN, 1, 1, 0);
    Price b = new Price(JAN, 2, 2, 0);
    assertThatThrownBy(() -> new Prices(Map.of("m", List.of(a, b)), null, Prices.Unknown.REFUSE))
        .hasMessageContaining("prices.m");
  }
}
