package io.sluice.core.session;

import java.util.Arrays;
import org.jspecify.annotations.Nullable;

/**
 * The trusted signals a feature's check reads from the request (say an SDK's retry counter), by
 * key, as the front end read them from the sources the operator declared trusted ({@code signals}):
 * only the ones a registered feature asks for while it is on, so a request carries no signal nobody
 * reads. A client header is never here unless the operator declared it a signal's source.
 * Immutable.
 */
public final class Signals {
  /** None read. */
  public static final Signals NONE = new Signals(new String[0], new String[0]);

  private final String[] keys;
  private final @Nullable String[] values;

  private Signals(String[] keys, @Nullable String[] values) {
    this.keys = keys;
    this.values = values;
  }

  /**
   * The values read for {@code keys} (same length; a null value: the signal was absent). Takes both
   * arrays as they are: the caller changes neither afterwards.
   */
  public static Signals of(String[] keys, @Nullable String[] values) {
    if (keys.length != values.length) {
      throw new IllegalArgumentException("keys and values differ in length");
    }
    return keys.length == 0 ? NONE : new Signals(keys, values);
  }

  /** One signal's value (tests, tools). */
  public static Signals of(String key, @Nullable String value) {
    return new Signals(new String[] {key}, new @Nullable String[] {value});
  }

  /** These signals and {@code key}'s {@code value} (replacing a value of its own, if any). */
  public Signals with(String key, @Nullable String value) {
    for (int i = 0; i < keys.length; i++) {
      if (keys[i].equals(key)) {
        @Nullable String[] v = values.clone();
        v[i] = value;
        return new Signals(keys, v);
      }
    }
    String[] k = Arrays.copyOf(keys, keys.length + 1);
    @Nullable String[] v = Arrays.copyOf(values, values.length + 1);
    k[keys.length] = key;
    v[values.length] = value;
    return new Signals(k, v);
  }

  /** The signal's value, or null when it was absent or not read. */
  public @Nullable String get(String key) {
    for (int i = 0; i < keys.length; i++) {
      if (keys[i].equals(key)) {
        return values[i];
      }
    }
    return null;
  }

  @Override
  public boolean equals(@Nullable Object o) {
    return o instanceof Signals s && Arrays.equals(keys, s.keys) && Arrays.equals(values, s.values);
  }

  @Override
  public int hashCode() {
    return 31 * Arrays.hashCode(keys) + Arrays.hashCode(values);
  }

  @Override
  public String toString() {
    StringBuilder b = new StringBuilder("Signals{");
    for (int i = 0; i < keys.length; i++) {
      b.append(i == 0 ? "" : ", ").append(keys[i]).append('=').append(values[i]);
    }
    return b.append('}').toString();
  }
}
