package io.sluice.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * NullAway on every package of the main sources (server, harness and bench), as a test: the
 * compiler checks only {@code @NullMarked} packages ({@code -XepOpt:NullAway:OnlyNullMarked=true}),
 * so every package has a {@code package-info.java} that marks it, nothing opts out with
 * {@code @NullUnmarked}, and each module's build runs NullAway as an error (docs/testing.md,
 * "Static analysis").
 */
class NullnessRulesTest {
  static final Path MAIN = Path.of("src/main/java");
  static final List<Path> OTHER_MAINS =
      List.of(Path.of("../harness/src/main/java"), Path.of("../bench/src/main/java"));

  /**
   * Packages of the harness and bench not marked yet (main root, package), frozen: this list only
   * shrinks, and is empty.
   */
  static final Set<String> NOT_YET_MARKED = Set.of();

  static final Pattern MARK = Pattern.compile("@(org\\.jspecify\\.annotations\\.)?NullMarked\\b");

  @Test
  void everyMainPackage_isNullMarked() {
    assertThat(packages(MAIN)).as("main packages found (run from the server module)").isNotEmpty();
    assertThat(unmarked(MAIN))
        .as("packages without @NullMarked in their package-info.java (NullAway skips them)")
        .isEmpty();
  }

  @Test
  void harnessAndBenchPackages_areNullMarked() {
    Set<String> unmarked = new TreeSet<>();
    for (Path main : OTHER_MAINS) {
      assertThat(packages(main)).as("main packages found in %s", main).isNotEmpty();
      unmarked(main).forEach(p -> unmarked.add(main + ": " + p));
    }
    assertThat(unmarked)
        .as("harness and bench packages without @NullMarked that are not listed")
        .isSubsetOf(NOT_YET_MARKED);
    assertThat(NOT_YET_MARKED)
        .as("listed packages that are marked now: remove them from the list")
        .isSubsetOf(unmarked);
  }

  @Test
  void noMainCode_optsOut() {
    for (Path main : Stream.concat(Stream.of(MAIN), OTHER_MAINS.stream()).toList()) {
      List<String> optOuts;
      try (Stream<Path> walk = Files.walk(main)) {
        optOuts =
            walk.filter(p -> p.toString().endsWith(".java"))
                .filter(
                    p ->
                        ShapeRulesTest.lines(p).stream().anyMatch(l -> l.contains("@NullUnmarked")))
                .map(p -> main.relativize(p).toString())
                .toList();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      assertThat(optOuts)
          .as("main files of %s that opt out of NullAway (@NullUnmarked)", main)
          .isEmpty();
    }
  }

  @Test
  void theBuild_runsNullAwayAsAnError_onMarkedPackages() throws IOException {
    String root = Files.readString(Path.of("../pom.xml"));
    assertThat(root)
        .contains("-Xep:NullAway:ERROR")
        .contains("-XepOpt:NullAway:OnlyNullMarked=true");
    for (String module : List.of("pom.xml", "../harness/pom.xml", "../bench/pom.xml")) {
      assertThat(Files.readString(Path.of(module)))
          .as(module)
          .contains("<arg>${errorprone.args}</arg>")
          .contains("<artifactId>nullaway</artifactId>");
    }
  }

  @Test
  void unmarked_bites(@TempDir Path dir) throws IOException {
    Files.createDirectories(dir.resolve("a/b"));
    Files.writeString(dir.resolve("a/b/X.java"), "package a.b;\nclass X {}\n");
    Files.createDirectories(dir.resolve("c"));
    Files.writeString(dir.resolve("c/Y.java"), "package c;\nclass Y {}\n");
    Files.writeString(
        dir.resolve("c/package-info.java"), "@org.jspecify.annotations.NullMarked\npackage c;\n");
    Files.createDirectories(dir.resolve("d"));
    Files.writeString(dir.resolve("d/Z.java"), "package d;\nclass Z {}\n");
    Files.writeString(dir.resolve("d/package-info.java"), "/** No mark. */\npackage d;\n");
    assertThat(unmarked(dir)).containsExactly("a/b", "d");
  }

  /** The directories under {@code root} that hold a Java source. */
  static Set<Path> packages(Path root) {
    try (Stream<Path> walk = Files.walk(root)) {
      Set<Path> out = new TreeSet<>();
      walk.filter(p -> p.toString().endsWith(".java")).forEach(p -> out.add(p.getParent()));
      return out;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The packages under {@code root} whose package-info.java is missing or does not mark them. */
  static Set<String> unmarked(Path root) {
    Set<String> out = new TreeSet<>();
    for (Path dir : packages(root)) {
      Path info = dir.resolve("package-info.java");
      boolean marked =
          Files.isRegularFile(info)
              && ShapeRulesTest.lines(info).stream().anyMatch(l -> MARK.matcher(l).find());
      if (!marked) {
        out.add(root.relativize(dir).toString().replace('\\', '/'));
      }
    }
    return out;
  }
}
