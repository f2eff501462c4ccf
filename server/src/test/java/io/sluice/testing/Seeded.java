package io.sluice.testing;

import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * Seeded property runs: {@code tries} cases, case {@code i} drawn from its own {@link
 * SplittableRandom} seeded with {@link #caseSeed(long, int)}. Every run draws the same cases; a
 * failure names the property seed, the try, the case seed and the generated sample, so it replays
 * by re-running the test (or by {@link #replay} with the case seed while debugging).
 *
 * <p>{@link Gen} mixes edge cases (range ends, zero, one, minus one, empty and longest sizes) into
 * uniform and small-magnitude draws, so boundaries are exercised in every run.
 */
public final class Seeded {
  private Seeded() {}

  /** A check that may throw (assertion errors, checked parser exceptions). */
  @FunctionalInterface
  public interface Check<T> {
    void accept(T sample) throws Exception;
  }

  /** Generates a sample per try, then checks it; fails with the seeds and the sample. */
  public static <T> void forAll(
      long seed, int tries, Function<Gen, ? extends T> generator, Check<? super T> check) {
    for (int i = 0; i < tries; i++) {
      long caseSeed = caseSeed(seed, i);
      runCase(seed, i, tries, caseSeed, generator, check);
    }
  }

  /** Runs one case again from its case seed (as printed by a failure). */
  public static <T> void replay(
      long caseSeed, Function<Gen, ? extends T> generator, Check<? super T> check) {
    runCase(0, 0, 1, caseSeed, generator, check);
  }

  public static long caseSeed(long seed, int tryIndex) {
    return new SplittableRandom(seed ^ (0x9E3779B97F4A7C15L * (tryIndex + 1L))).nextLong();
  }

  private static <T> void runCase(
      long seed,
      int i,
      int tries,
      long caseSeed,
      Function<Gen, ? extends T> generator,
      Check<? super T> check) {
    T sample = generator.apply(new Gen(new SplittableRandom(caseSeed)));
    try {
      check.accept(sample);
    } catch (Throwable t) {
      AssertionError e =
          new AssertionError(
              String.format(
                  "property failed on try %d of %d (seed 0x%xL, case seed 0x%xL: replay with"
                      + " Seeded.replay(0x%xL, ...))%n  sample: %s%n  failure: %s",
                  i + 1, tries, seed, caseSeed, caseSeed, describe(sample), t),
              t);
      throw e;
    }
  }

  /** Readable samples: byte arrays in hex, nested lists/arrays element by element. */
  public static String describe(Object o) {
    if (o == null) {
      return "null";
    }
    if (o instanceof byte[] b) {
      return "0x" + HexFormat.of().formatHex(b) + " (" + b.length + " bytes)";
    }
    if (o instanceof Object[] a) {
      List<String> parts = new ArrayList<>();
      for (Object e : a) {
        parts.add(describe(e));
      }
      return parts.toString();
    }
    if (o instanceof List<?> l) {
      List<String> parts = new ArrayList<>();
      for (Object e : l) {
        parts.add(describe(e));
      }
      return parts.toString();
    }
    return String.valueOf(o);
  }

  /** The generators: explicit draws from one case's random, edge cases included. */
  public static final class Gen {
    /** One draw in this many is an edge case of its range. */
    private static final int EDGE_ONE_IN = 8;

    private final SplittableRandom r;

    Gen(SplittableRandom r) {
      this.r = r;
    }

    /** The case's random, for code under test that takes one (reproducible with the case). */
    public SplittableRandom random() {
      return r;
    }

    public boolean bool() {
      return r.nextBoolean();
    }

    /** True with probability {@code p}. */
    public boolean chance(double p) {
      return r.nextDouble() < p;
    }

    /** An int in [min, max], both included. */
    public int intBetween(int min, int max) {
      return (int) longBetween(min, max);
    }

    /**
     * A long in [min, max], both included: an edge case (min, max, min+1, max-1, 0, 1, -1 where in
     * range) one draw in eight, a small-magnitude value (uniform bit length, next to the value
     * closest to zero) in a third of the rest, otherwise uniform.
     */
    public long longBetween(long min, long max) {
      if (min > max) {
        throw new IllegalArgumentException("min " + min + " > max " + max);
      }
      if (r.nextInt(EDGE_ONE_IN) == 0) {
        long[] edges = {min, max, min + 1, max - 1, 0, 1, -1};
        long e = edges[r.nextInt(edges.length)];
        if (e >= min && e <= max) {
          return e;
        }
        return min;
      }
      if (r.nextInt(3) == 0) {
        long target = min > 0 ? min : Math.min(max, 0);
        boolean down = target == max || (target > min && r.nextBoolean());
        long span = down ? target - min : max - target; // unsigned for the full long range
        if (span < 0) {
          span = Long.MAX_VALUE;
        }
        int bits = r.nextInt(65 - Long.numberOfLeadingZeros(span));
        long offset = bits == 0 ? 0 : r.nextLong() >>> (64 - bits);
        if (offset > span) {
          offset = r.nextLong(span + 1); // span < Long.MAX_VALUE here
        }
        return down ? target - offset : target + offset;
      }
      if (max - min >= 0 && max - min < Long.MAX_VALUE) {
        return min + r.nextLong(max - min + 1);
      }
      while (true) { // the range is wider than Long.MAX_VALUE
        long v = r.nextLong();
        if (v >= min && v <= max) {
          return v;
        }
      }
    }

    /** Any long, edge cases (Long.MIN_VALUE, Long.MAX_VALUE, 0, ±1) included. */
    public long anyLong() {
      return longBetween(Long.MIN_VALUE, Long.MAX_VALUE);
    }

    /** Any byte, edge cases (-128, 127, 0, ±1) included. */
    public byte anyByte() {
      return (byte) longBetween(Byte.MIN_VALUE, Byte.MAX_VALUE);
    }

    /** A double in [min, max): uniform, with min (and values just below max) as edge cases. */
    public double doubleBetween(double min, double maxExcluded) {
      int k = r.nextInt(EDGE_ONE_IN);
      if (k == 0) {
        return min;
      }
      if (k == 1) {
        return Math.nextDown(maxExcluded);
      }
      return min + r.nextDouble() * (maxExcluded - min);
    }

    public <T> T oneOf(List<T> values) {
      return values.get(r.nextInt(values.size()));
    }

    @SafeVarargs
    public final <T> T oneOf(T... values) {
      return values[r.nextInt(values.length)];
    }

    public <E extends Enum<E>> E anyOf(Class<E> type) {
      return oneOf(type.getEnumConstants());
    }

    /** {@code null} with probability {@code p}, else a generated value. */
    public <T> T orNull(double p, Supplier<T> value) {
      return chance(p) ? null : value.get();
    }

    /** Picks a generator by weight, as in {weight, generator} pairs. */
    @SafeVarargs
    public final <T> T frequency(Map.Entry<Integer, Supplier<? extends T>>... choices) {
      int total = 0;
      for (Map.Entry<Integer, Supplier<? extends T>> c : choices) {
        total += c.getKey();
      }
      int pick = r.nextInt(total);
      for (Map.Entry<Integer, Supplier<? extends T>> c : choices) {
        pick -= c.getKey();
        if (pick < 0) {
          return c.getValue().get();
        }
      }
      throw new AssertionError("unreachable");
    }

    /** A size in [min, max]: the empty/smallest and the largest size are edge cases. */
    public int size(int min, int max) {
      return intBetween(min, max);
    }

    public <T> List<T> list(int minSize, int maxSize, Supplier<? extends T> element) {
      int n = size(minSize, maxSize);
      List<T> out = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        out.add(element.get());
      }
      return out;
    }

    /** A set of up to {@code maxSize} distinct values (fewer when the draws repeat). */
    public <T> Set<T> set(int maxSize, Supplier<? extends T> element) {
      int n = size(0, maxSize);
      Set<T> out = new LinkedHashSet<>();
      for (int attempts = 0; out.size() < n && attempts < 10 * n + 10; attempts++) {
        out.add(element.get());
      }
      return out;
    }

    public byte[] bytes(int maxSize) {
      byte[] b = new byte[size(0, maxSize)];
      for (int i = 0; i < b.length; i++) {
        b[i] = anyByte();
      }
      return b;
    }

    /** A string of chars drawn from {@code chars} (each char on its own, surrogates included). */
    public String string(String chars, int minLength, int maxLength) {
      int n = size(minLength, maxLength);
      char[] cs = new char[n];
      for (int i = 0; i < n; i++) {
        cs[i] = chars.charAt(r.nextInt(chars.length()));
      }
      return new String(cs);
    }

    /** A char in [lo, hi]: the ends, and {@code ' '} where in range, are edge cases. */
    public char charBetween(char lo, char hi) {
      if (r.nextInt(EDGE_ONE_IN) == 0) {
        char[] edges = {lo, hi, ' '};
        char e = edges[r.nextInt(edges.length)];
        return e >= lo && e <= hi ? e : lo;
      }
      return (char) (lo + r.nextInt(hi - lo + 1));
    }

    /** A string of any UTF-16 chars, lone surrogates included. */
    public String anyString(int maxLength) {
      int n = size(0, maxLength);
      char[] cs = new char[n];
      for (int i = 0; i < n; i++) {
        cs[i] = charBetween('\u0000', '\uffff');
      }
      return new String(cs);
    }

    /** A string of any chars but surrogates (D800-DFFF), so text that encodes one way. */
    public String textWithoutSurrogates(int maxLength) {
      int n = size(0, maxLength);
      char[] cs = new char[n];
      for (int i = 0; i < n; i++) {
        char c;
        do {
          c = charBetween('\u0000', '\uffff');
        } while (c >= 0xD800 && c < 0xE000);
        cs[i] = c;
      }
      return new String(cs);
    }
  }
}
