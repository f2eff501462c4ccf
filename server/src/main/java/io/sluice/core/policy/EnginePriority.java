package io.sluice.core.policy;

import java.math.BigDecimal;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * A pool's mapping from request class (and tier) to the inference engine's own priority ({@code
 * pools.<name>.enginePriority}), written into the admitted request's body ({@code field}) and/or a
 * header, so the engine's scheduler orders what Sluice admitted the way Sluice ranks it.
 *
 * <p>Engines disagree on polarity and range, so presets derive the value from the class's {@code
 * rank} (0 = most urgent, {@code maxRank} = least):
 *
 * <ul>
 *   <li>{@code vllm}: {@code priority} integer, lower runs first (vLLM's priority scheduling):
 *       {@code rank};
 *   <li>{@code sglang}: {@code priority} integer, higher runs first (SGLang's default): {@code
 *       maxRank - rank};
 *   <li>{@code tensorrt-llm}: {@code priority} float in [0, 1], higher runs first (TensorRT-LLM's
 *       request priority, default 0.5): {@code 1 - rank / (maxRank + 1)}, rounded to 3 places.
 * </ul>
 *
 * {@code values} overrides them: keys {@code <class>/<tier>} win over {@code <class>}; a class
 * neither names nor a preset covers gets no value.
 *
 * @param preset how values are derived from the class rank ({@link Preset#NONE}: only {@code
 *     values})
 * @param field the body field to write (null: none)
 * @param header the request header to write (null: none)
 * @param values explicit values (JSON numbers as text), by {@code class} or {@code class/tier}
 */
public record EnginePriority(
    Preset preset, @Nullable String field, @Nullable String header, Map<String, String> values) {

  /** No engine priority is written. */
  public static final EnginePriority OFF = new EnginePriority(Preset.NONE, null, null, Map.of());

  /** How values are derived from the class rank. */
  public enum Preset {
    NONE("none"),
    VLLM("vllm"),
    SGLANG("sglang"),
    TENSORRT_LLM("tensorrt-llm");

    private final String configName;

    Preset(String configName) {
      this.configName = configName;
    }

    public String configName() {
      return configName;
    }

    /** The preset of a config name; null when none matches. */
    public static @Nullable Preset of(String name) {
      String n = name.trim().toLowerCase(Locale.ROOT);
      for (Preset p : values()) {
        if (p.configName.equals(n)) {
          return p;
        }
      }
      return null;
    }
  }

  public EnginePriority {
    Objects.requireNonNull(preset, "preset");
    values = Map.copyOf(values);
    for (Map.Entry<String, String> e : values.entrySet()) {
      try {
        new BigDecimal(e.getValue());
      } catch (NumberFormatException ex) {
        throw new IllegalArgumentException(
            "values." + e.getKey() + ": " + e.getValue() + " (expected: a number)", ex);
      }
    }
  }

  /** Whether anything is written. */
  public boolean enabled() {
    return (field != null || header != null) && (preset != Preset.NONE || !values.isEmpty());
  }

  /**
   * The engine priority of a request of class {@code cls} (its {@code rank} among classes ranked
   * {@code 0..maxRank}) and tier {@code tier}, as JSON number text; null when none applies.
   */
  public @Nullable String valueFor(String cls, int rank, int maxRank, String tier) {
    String v = values.get(cls + "/" + tier);
    if (v == null) {
      v = values.get(cls);
    }
    if (v != null) {
      return v;
    }
    int top = Math.max(maxRank, rank);
    return switch (preset) {
      case NONE -> null;
      case VLLM -> Integer.toString(rank);
      case SGLANG -> Integer.toString(top - rank);
      case TENSORRT_LLM -> {
        double x = 1.0 - (double) rank / (top + 1);
        yield BigDecimal.valueOf(Math.round(x * 1000) / 1000.0)
            .stripTrailingZeros()
            .toPlainString();
      }
    };
  }
}
