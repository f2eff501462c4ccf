package io.sluice.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaField;
import com.tngtech.archunit.core.domain.JavaMethod;
import com.tngtech.archunit.core.domain.JavaModifier;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * The shape of the classes as a test, beside {@link ShapeRulesTest}'s file sizes: a class holds at
 * most {@link #MAX_FIELDS} instance fields (more means it does more than one job: split it), the
 * admission session is a sequencer (at most {@link #SESSION_FIELDS} fields, of which at most {@link
 * #SESSION_FLAGS} booleans: phases are an enum, not flags; at most {@link #SESSION_LINES} lines:
 * the front end reads and drives the running request through its part, not through pass-throughs),
 * and a pool has one decide entry and stays a lock over its parts (at most {@link #POOL_LINES}
 * lines: a new job of the pool is a part or a limit source of its own, not more of {@code
 * PoolState}).
 */
class ClassShapeTest {
  static final int MAX_FIELDS = 20;
  static final int SESSION_FIELDS = 15;
  static final int SESSION_FLAGS = 3;
  static final int SESSION_LINES = 400;
  static final java.nio.file.Path SESSION_FILE =
      java.nio.file.Path.of("src/main/java/io/sluice/core/session/AdmissionSession.java");
  static final String SESSION = "io.sluice.core.session.AdmissionSession";
  static final String POOL = "io.sluice.core.admission.PoolState";
  static final int POOL_LINES = 450;
  static final java.nio.file.Path POOL_FILE =
      java.nio.file.Path.of("src/main/java/io/sluice/core/admission/PoolState.java");
  static final String GENERATED = "io.sluice.api."; // protoc's classes

  /**
   * Classes over {@link #MAX_FIELDS} written before this test, with their count then: each may only
   * shrink, nothing may join, and the list shrinks to empty as they are split.
   */
  static final Map<String, Integer> NOT_YET_SPLIT = Map.of();

  @Test
  void classes_holdAtMostTwentyFields() {
    Map<String, Integer> over = new TreeMap<>();
    for (JavaClass c : LayerRulesTest.CLASSES) {
      if (c.getPackageName().startsWith(GENERATED)) {
        continue;
      }
      int n = instanceFields(c).size();
      if (n > MAX_FIELDS) {
        over.put(c.getName(), n);
      }
    }
    List<String> breaking = new ArrayList<>();
    over.forEach(
        (name, n) -> {
          Integer frozen = NOT_YET_SPLIT.get(name);
          if (frozen == null || n > frozen) {
            breaking.add(name + " (" + n + " fields)");
          }
        });
    assertThat(breaking)
        .as("classes over %d instance fields that are not listed (split them)", MAX_FIELDS)
        .isEmpty();
    List<String> stale = new ArrayList<>();
    NOT_YET_SPLIT.forEach(
        (name, n) -> {
          if (!over.containsKey(name) || over.get(name) < n) {
            stale.add(name + " (now " + over.getOrDefault(name, 0) + ")");
          }
        });
    assertThat(stale).as("entries that shrank: lower or remove them").isEmpty();
  }

  @Test
  void session_isASequencer() {
    JavaClass session = LayerRulesTest.CLASSES.get(SESSION);
    List<JavaField> fields = instanceFields(session);
    long flags = fields.stream().filter(f -> f.getRawType().getName().equals("boolean")).count();
    assertThat(fields.size())
        .as("the session's instance fields")
        .isLessThanOrEqualTo(SESSION_FIELDS);
    assertThat(flags)
        .as("the session's boolean fields (phases are an enum)")
        .isLessThanOrEqualTo(SESSION_FLAGS);
  }

  @Test
  void session_staysASequencerInSize() {
    assertThat(ShapeRulesTest.lines(SESSION_FILE))
        .as("the session's lines (%s)", SESSION_FILE)
        .hasSizeLessThanOrEqualTo(SESSION_LINES);
  }

  @Test
  void pool_hasOneDecideEntry() {
    JavaClass pool = LayerRulesTest.CLASSES.get(POOL);
    List<String> entries = new ArrayList<>();
    for (JavaMethod m : pool.getMethods()) {
      if (!m.getModifiers().contains(JavaModifier.PRIVATE)
          && m.getName().toLowerCase(java.util.Locale.ROOT).startsWith("decide")) {
        entries.add(m.getFullName());
      }
    }
    assertThat(entries).as("the pool's decide entries (not private)").hasSize(1);
  }

  @Test
  void pool_staysALockOverPartsInSize() {
    assertThat(ShapeRulesTest.lines(POOL_FILE))
        .as("the pool's lines (%s)", POOL_FILE)
        .hasSizeLessThanOrEqualTo(POOL_LINES);
  }

  @Test
  void fieldCount_bites() {
    JavaClass wide = new ClassFileImporter().importClass(TwentyOneFields.class);
    assertThat(instanceFields(wide)).hasSize(21);
  }

  @SuppressWarnings("unused")
  static final class TwentyOneFields {
    static final int NOT_COUNTED = 0;
    int a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t;
    boolean u;
  }

  static List<JavaField> instanceFields(JavaClass c) {
    List<JavaField> out = new ArrayList<>();
    for (JavaField f : c.getFields()) {
      if (!f.getModifiers().contains(JavaModifier.STATIC)
          && !f.getModifiers().contains(JavaModifier.SYNTHETIC)) {
        out.add(f);
      }
    }
    return out;
  }
}
