package io.sluice.wire;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.testing.Seeded;
import io.sluice.testing.Seeded.Gen;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@link ByteKeys#find} and {@link ProtoReader#ascii} read bytes a long at a time (the first and
 * last eight of a run, a short run masked, past the end byte by byte): on seeded names that share
 * their length and their first or last eight bytes, differ in one byte anywhere (a non-ASCII one
 * too), and runs anywhere in an array (at its very end included), each answers what a plain
 * comparison of the bytes answers.
 */
class ByteKeysTest {
  /** A table's names, and runs to find: {@code array}'s bytes [off, off + len). */
  record Probe(byte[] array, int off, int len) {}

  record Case(List<byte[]> names, List<Probe> probes) {}

  @Test
  void find_onNearMissNamesAnywhereInTheArray_answersAsComparingTheBytes() {
    Seeded.forAll(
        0x5EED_0340L,
        400,
        g -> {
          List<byte[]> names = names(g);
          List<Probe> probes = new ArrayList<>();
          for (int t = 0; t < 100; t++) {
            byte[] run = near(g, g.oneOf(names));
            int before = g.intBetween(0, 9);
            int after = g.bool() ? 0 : g.intBetween(0, 9); // at the end: no 8 bytes past it
            byte[] b = new byte[before + run.length + after];
            for (int k = 0; k < b.length; k++) {
              b[k] = g.anyByte();
            }
            System.arraycopy(run, 0, b, before, run.length);
            probes.add(new Probe(b, before, run.length));
          }
          return new Case(names, probes);
        },
        c -> {
          List<byte[]> names = c.names();
          int[] slots = new int[names.size()];
          for (int i = 0; i < slots.length; i++) {
            slots[i] = 100 + i;
          }
          ByteKeys keys = new ByteKeys(names.toArray(byte[][]::new), slots);
          for (Probe p : c.probes()) {
            byte[] run = Arrays.copyOfRange(p.array(), p.off(), p.off() + p.len());
            int expected = -1;
            for (int i = 0; i < names.size(); i++) {
              if (Arrays.equals(names.get(i), run)) {
                expected = slots[i];
              }
            }
            assertThat(keys.find(p.array(), p.off(), p.len()))
                .as("%s", Arrays.toString(run))
                .isEqualTo(expected);
          }
        });
  }

  /**
   * The lengths no name has stop at once (a mask of the lengths under 64; from 64 up, the table):
   * runs of every length from 0 to 130 against names of 0, 1, 8, 9, 63, 64, 65 and 100 bytes find
   * exactly the names of their own bytes, and nothing at any other length.
   */
  @Test
  void find_atEveryLength_aroundTheLengthMasksEnd_findsExactlyTheNames() {
    int[] lengths = {0, 1, 8, 9, 63, 64, 65, 100};
    byte[][] names = new byte[lengths.length][];
    int[] slots = new int[lengths.length];
    for (int i = 0; i < lengths.length; i++) {
      names[i] = new byte[lengths[i]];
      Arrays.fill(names[i], (byte) 'k');
      slots[i] = 7 + i;
    }
    ByteKeys keys = new ByteKeys(names, slots);
    for (int len = 0; len <= 130; len++) {
      byte[] run = new byte[len + 3];
      Arrays.fill(run, (byte) 'k');
      int expected = -1;
      for (int i = 0; i < lengths.length; i++) {
        if (lengths[i] == len) {
          expected = slots[i];
        }
      }
      assertThat(keys.find(run, 2, len)).as("length %d", len).isEqualTo(expected);
      if (len > 0) {
        run[2 + len - 1] = 'x'; // its last byte differs: no name
        assertThat(keys.find(run, 2, len)).as("length %d, last byte off", len).isEqualTo(-1);
      }
    }
  }

  @Test
  void ascii_ofRunsOfEveryLengthAnywhere_answersAsTestingEachByte() {
    Seeded.forAll(
        0x5EED_0341L,
        3000,
        g -> {
          byte[] b = new byte[g.intBetween(0, 40)];
          for (int k = 0; k < b.length; k++) {
            b[k] = (byte) (g.chance(0.05) ? g.anyByte() : g.intBetween(0, 127));
          }
          int off = g.intBetween(0, b.length);
          return new int[][] {toInts(b), {off, g.intBetween(0, b.length - off)}};
        },
        c -> {
          byte[] b = toBytes(c[0]);
          int off = c[1][0];
          int len = c[1][1];
          boolean expected = true;
          for (int k = off; k < off + len; k++) {
            expected &= b[k] >= 0;
          }
          assertThat(new Reader(b).ascii(off, len)).isEqualTo(expected);
        });
  }

  /** The names of one table: lengths 0 to 40, many alike (a shared head, tail or length). */
  private static List<byte[]> names(Gen g) {
    List<byte[]> out = new ArrayList<>();
    int n = g.intBetween(1, 12);
    while (out.size() < n) {
      byte[] name =
          out.isEmpty() || g.bool()
              ? g.string("ab-:", 0, 40).getBytes(java.nio.charset.StandardCharsets.UTF_8)
              : near(g, g.oneOf(out));
      if (out.stream().noneMatch(o -> Arrays.equals(o, name))) {
        out.add(name);
      }
    }
    return out;
  }

  /** {@code name} itself, or with one byte changed (to any byte), or one byte longer or shorter. */
  private static byte[] near(Gen g, byte[] name) {
    byte[] b = name.clone();
    switch (g.intBetween(0, 3)) {
      case 0 -> {
        return b;
      }
      case 1 -> {
        if (b.length > 0) {
          b[g.intBetween(0, b.length - 1)] = g.bool() ? (byte) 'a' : g.anyByte();
        }
        return b;
      }
      case 2 -> {
        return Arrays.copyOf(b, b.length + 1);
      }
      default -> {
        return b.length == 0 ? b : Arrays.copyOf(b, b.length - 1);
      }
    }
  }

  private static int[] toInts(byte[] b) {
    int[] out = new int[b.length];
    for (int k = 0; k < b.length; k++) {
      out[k] = b[k];
    }
    return out;
  }

  private static byte[] toBytes(int[] a) {
    byte[] out = new byte[a.length];
    for (int k = 0; k < a.length; k++) {
      out[k] = (byte) a[k];
    }
    return out;
  }

  /** ProtoReader's steps over a given array. */
  private static final class Reader extends ProtoReader {
    Reader(byte[] bytes) {
      super(bytes);
    }
  }
}
