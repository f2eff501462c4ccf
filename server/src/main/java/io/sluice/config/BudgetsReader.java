package io.sluice.config;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sluice.core.budget.Budget;
import io.sluice.core.budget.Period;
import io.sluice.core.budget.Price;
import io.sluice.core.budget.Prices;
import io.sluice.core.budget.Terms;
import java.math.BigDecimal;
import java.time.DateTimeException;
import java.time.DayOfWeek;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * Reads (and writes back) the budgets and the price table of the {@code budgets} section ({@link
 * BudgetsSection}): money in the currency's units with up to nine decimals (nano-units inside),
 * every error naming its path and the value expected.
 */
final class BudgetsReader {
  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final BigDecimal NANO = BigDecimal.ONE.movePointRight(9);

  /** Whether a money budget was read (it then needs a price table). */
  boolean money;

  /** Lists of budgets by name (tier, tenant, route). */
  Map<String, List<Budget>> byName(Node n) {
    Map<String, List<Budget>> out = new LinkedHashMap<>();
    for (var e : n.entries().entrySet()) {
      out.put(e.getKey(), list(e.getValue()));
    }
    return out;
  }

  /** A list of budgets (names unique within it). */
  List<Budget> list(Node n) {
    List<Budget> out = new ArrayList<>();
    Set<String> names = new HashSet<>();
    for (Node b : n.items()) {
      Budget budget = budget(b);
      if (budget != null) {
        if (!names.add(budget.name())) {
          b.get("name").invalid(budget.name(), "a name not used twice in the list");
        } else {
          out.add(budget);
        }
      }
    }
    return out;
  }

  private @Nullable Budget budget(Node n) {
    n.only(
        Set.of(
            "name",
            "meter",
            "limit",
            "period",
            "zone",
            "weekStart",
            "window",
            "slices",
            "thresholds",
            "pacing",
            "degradeAt"));
    String name = n.get("name").requiredString();
    if (!name.isEmpty() && !name.matches("[A-Za-z0-9_.-]{1,64}")) {
      n.get("name").invalid(name, "1-64 letters, digits, '_', '.', '-'");
      return null;
    }
    Budget.Meter meter =
        n.get("meter").enumValue(Budget.Meter.class, Budget.Meter.TOKENS, Budget.Meter::configName);
    money |= meter.priced();
    long limit =
        meter.priced()
            ? money(n.get("limit"), true)
            : n.get("limit").longValue(0, 1, Long.MAX_VALUE);
    if (!n.get("limit").present()) {
      n.get("limit")
          .error(
              n.get("limit").path()
                  + ": missing (expected: "
                  + (meter.priced() ? "an amount > 0" : "a whole number of tokens > 0")
                  + ")");
      return null;
    }
    Period period = period(n);
    List<Double> thresholds = new ArrayList<>();
    for (Node t : n.get("thresholds").items()) {
      double v = t.doubleValue(0.5, 0.0, 1.0);
      if (!(v > 0 && v < 1)
          || (!thresholds.isEmpty() && v <= thresholds.get(thresholds.size() - 1))) {
        t.invalid(t.value().toString(), "a fraction in (0, 1), above the one before");
        return null;
      }
      thresholds.add(v);
    }
    long burst = pacing(n.get("pacing"), meter, limit);
    Terms terms = n.get("thresholds").build(() -> new Terms(Math.max(1, limit), thresholds, burst));
    if (period == null || terms == null || name.isEmpty() || limit < 1) {
      return null;
    }
    Double degradeAt =
        n.get("degradeAt").present() ? n.get("degradeAt").doubleValue(0.0, 0.0, 1.0) : null;
    return new Budget(name, meter, period, terms, degradeAt);
  }

  /** {@code pacing: false}, {@code true}, or {@code {enabled, burst}}: the burst, 0 when off. */
  private long pacing(Node n, Budget.Meter meter, long limit) {
    if (!n.present()) {
      return 0;
    }
    if (n.value().isBoolean()) {
      return n.value().asBoolean() ? defaultBurst(limit) : 0;
    }
    n.only(Set.of("enabled", "burst"));
    if (!n.get("enabled").bool(true)) {
      return 0;
    }
    Node b = n.get("burst");
    if (!b.present()) {
      return defaultBurst(limit);
    }
    long burst = meter.priced() ? money(b, true) : b.longValue(1, 1, Long.MAX_VALUE);
    if (burst > limit) {
      b.invalid(b.value().toString(), "a burst no larger than the limit");
      return defaultBurst(limit);
    }
    return burst;
  }

  private static long defaultBurst(long limit) {
    return Math.max(1, limit / 100); // 1 % of the budget at once above the pace
  }

  private static @Nullable Period period(Node n) {
    String unit = n.get("period").string("month");
    if (unit.equals("rolling")) {
      Duration window = n.get("window").duration(Duration.ofHours(24));
      int slices = n.get("slices").intValue(24, 1, 1440);
      return n.get("window").build(() -> new Period.Rolling(window, slices));
    }
    Period.Unit u;
    try {
      u = Period.Unit.valueOf(unit.toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      n.get("period").invalid(unit, "one of day, week, month, rolling");
      return null;
    }
    ZoneId zone = ZoneOffset.UTC;
    if (n.get("zone").present()) {
      try {
        zone = ZoneId.of(n.get("zone").string("UTC"));
      } catch (DateTimeException e) {
        n.get("zone").invalid(n.get("zone").string(""), "a time zone such as UTC or Europe/Berlin");
        return null;
      }
    }
    DayOfWeek start = DayOfWeek.MONDAY;
    if (n.get("weekStart").present()) {
      try {
        start = DayOfWeek.valueOf(n.get("weekStart").string("").toUpperCase(Locale.ROOT));
      } catch (IllegalArgumentException e) {
        n.get("weekStart").invalid(n.get("weekStart").string(""), "a day such as monday or sunday");
        return null;
      }
    }
    return new Period.Calendar(u, zone, start);
  }

  /** An amount of money ({@code 25}, {@code 0.15}) in nano-units; {@code positive}: > 0. */
  static long money(Node n, boolean positive) {
    if (!n.present()) {
      return 0;
    }
    try {
      BigDecimal v = new BigDecimal(n.value().asText().trim());
      if (v.signum() < 0 || (positive && v.signum() == 0) || v.scale() > 9) {
        throw new NumberFormatException();
      }
      return v.multiply(NANO).longValueExact();
    } catch (NumberFormatException | ArithmeticException e) {
      n.invalid(
          n.value().toString(),
          positive
              ? "an amount > 0 with up to 9 decimals"
              : "an amount >= 0 with up to 9 decimals");
      return 0;
    }
  }

  /** The price table. */
  Prices prices(Node n) {
    n.only(Set.of("unknownModel", "default", "models"));
    Prices.Unknown unknown =
        n.get("unknownModel")
            .enumValue(
                Prices.Unknown.class,
                Prices.Unknown.REFUSE,
                u -> u.name().toLowerCase(Locale.ROOT));
    Price fallback = n.get("default").present() ? price(n.get("default"), false) : null;
    if (unknown == Prices.Unknown.DEFAULT && fallback == null) {
      n.get("default")
          .error(
              n.get("default").path() + ": missing (expected: a price, for unknownModel: default)");
      unknown = Prices.Unknown.REFUSE;
    }
    Map<String, List<Price>> models = new LinkedHashMap<>();
    for (var e : n.get("models").entries().entrySet()) {
      List<Price> list = new ArrayList<>();
      Node v = e.getValue();
      if (v.value().isObject()) {
        Price p = price(v, false);
        if (p != null) {
          list.add(p);
        }
      } else {
        for (Node item : v.items()) {
          Price p = price(item, true);
          if (p != null) {
            list.add(p);
          }
        }
      }
      models.put(e.getKey(), list);
    }
    Prices.Unknown u = unknown;
    Prices p = n.get("models").build(() -> new Prices(models, fallback, u));
    return p == null ? Prices.NONE : p;
  }

  private static @Nullable Price price(Node n, boolean dated) {
    n.only(Set.of("from", "input", "output", "cachedInput"));
    Instant from = Instant.EPOCH;
    if (n.get("from").present()) {
      String s = n.get("from").string("");
      try {
        from =
            s.contains("T")
                ? Instant.parse(s)
                : LocalDate.parse(s).atStartOfDay(ZoneOffset.UTC).toInstant();
      } catch (DateTimeException e) {
        n.get("from").invalid(s, "a date (2026-01-01) or an instant (2026-01-01T00:00:00Z)");
        return null;
      }
    } else if (dated) {
      n.get("from")
          .error(n.get("from").path() + ": missing (expected: the date the price takes effect)");
    }
    long input = money(n.get("input"), false);
    long output = money(n.get("output"), false);
    long cached = n.get("cachedInput").present() ? money(n.get("cachedInput"), false) : input;
    return new Price(from, input, output, cached);
  }

  static ObjectNode writePrices(Prices p) {
    ObjectNode n = MAPPER.createObjectNode();
    n.put("unknownModel", p.unknown().name().toLowerCase(Locale.ROOT));
    Price f = p.fallback();
    if (f != null) {
      n.set("default", writePrice(f));
    }
    ObjectNode models = n.putObject("models");
    p.byModel()
        .forEach(
            (m, list) -> {
              ArrayNode a = models.putArray(m);
              list.forEach(x -> a.add(writePrice(x)));
            });
    return n;
  }

  private static ObjectNode writePrice(Price p) {
    ObjectNode n = MAPPER.createObjectNode();
    n.put("from", p.from().toString())
        .put("input", amount(p.input()))
        .put("output", amount(p.output()))
        .put("cachedInput", amount(p.cachedInput()));
    return n;
  }

  private static BigDecimal amount(long nanos) {
    BigDecimal v = BigDecimal.valueOf(nanos).movePointLeft(9).stripTrailingZeros();
    return v.scale() < 0 ? v.setScale(0) : v;
  }

  static ArrayNode writeList(List<Budget> budgets) {
    ArrayNode a = MAPPER.createArrayNode();
    for (Budget b : budgets) {
      ObjectNode n = a.addObject();
      n.put("name", b.name()).put("meter", b.meter().configName());
      if (b.meter().priced()) {
        n.put("limit", amount(b.terms().limit()));
      } else {
        n.put("limit", b.terms().limit());
      }
      if (b.period() instanceof Period.Rolling r) {
        n.put("period", "rolling")
            .put("window", ConfigWriter.duration(r.length()))
            .put("slices", r.slices());
      } else {
        Period.Calendar c = (Period.Calendar) b.period();
        n.put("period", c.unit().spelling())
            .put("zone", c.zone().getId())
            .put("weekStart", c.weekStart().name().toLowerCase(Locale.ROOT));
      }
      ArrayNode t = n.putArray("thresholds");
      b.terms().thresholds().forEach(t::add);
      if (b.terms().paced()) {
        ObjectNode p = n.putObject("pacing").put("enabled", true);
        if (b.meter().priced()) {
          p.put("burst", amount(b.terms().burst()));
        } else {
          p.put("burst", b.terms().burst());
        }
      } else {
        n.put("pacing", false);
      }
      if (b.degradeAt() != null) {
        n.put("degradeAt", b.degradeAt());
      }
    }
    return a;
  }
}
