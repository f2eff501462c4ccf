package io.sluice.architecture;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.lang.ArchRule;
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

/**
 * Decision 0011's yardstick as a test: re-adding retry control touches its own files plus the
 * registration lines. No main class outside retry's own names one of its classes but {@code
 * bootstrap.Features} (the feature's entry), and the record's text search (its types, section,
 * script and signal keys) finds no other existing file than the two registrations and the optional
 * default policy. A feature that needs a line in the session, the pool, the loader or a shared
 * store fails here.
 */
class RetryYardstickTest {
  /** Retry's own classes: its model, check and port, its backends, section, meters and module. */
  static final Pattern OWN_CLASS =
      Pattern.compile(
          "io\\.sluice\\.(core\\.retry|feature\\.retry)\\..*"
              + "|io\\.sluice\\.(config\\.RetriesSection|observability\\.RetryMetrics"
              + "|observability\\.RetryRecorder|store\\.memory\\.InMemoryAttemptStore"
              + "|store\\.redis\\.RedisAttemptStore)(\\$.*)?");

  /** The existing files a re-add touches (decision 0011's table): two lines and one optional. */
  static final Set<String> REGISTRATIONS =
      Set.of(
          "java/io/sluice/bootstrap/Features.java",
          "resources/META-INF/services/io.sluice.config.ConfigSection");

  static final String OPTIONAL = "resources/io/sluice/config/default.yaml";

  /** Decision 0011's {@code git grep} pattern, unchanged. */
  static final Pattern NAMES_RETRY =
      Pattern.compile(
          "core\\.retry|RetryControl|RetryPolicy|RetryAttemptCheck|AttemptSignals|AttemptStore"
              + "|\\bAttempt\\b|RetriesSection|RetryMetrics|RetryRecorder|RetryFeature"
              + "|feature\\.retry|attempts\\.lua|RETRY_COUNT|ATTEMPT_COUNT|retryCount|attemptCount"
              + "|\"retries\"|Attempted|retries\\(\\)");

  /** Retry's own files, which the search leaves out (paths under src/main). */
  static final Pattern OWN_FILE =
      Pattern.compile(
          "java/io/sluice/(core|feature)/retry/.*|.*/(InMemoryAttemptStore|RedisAttemptStore"
              + "|RetriesSection|RetryMetrics|RetryRecorder)\\.java|.*/attempts\\.lua");

  private static final DescribedPredicate<JavaClass> RETRYS_OWN =
      new DescribedPredicate<>("are retry control's own") {
        @Override
        public boolean test(JavaClass c) {
          return OWN_CLASS.matcher(c.getName()).matches();
        }
      };

  static final ArchRule ONLY_THE_FEATURE_LIST_NAMES_RETRY =
      noClasses()
          .that(DescribedPredicate.not(RETRYS_OWN))
          .and()
          .doNotHaveFullyQualifiedName("io.sluice.bootstrap.Features")
          .should()
          .dependOnClassesThat(RETRYS_OWN)
          .because("a feature joins through its module and one registration line (decision 0011)");

  @Test
  void onlyTheFeatureList_namesRetryControlsClasses() {
    ONLY_THE_FEATURE_LIST_NAMES_RETRY.check(LayerRulesTest.CLASSES);
  }

  @Test
  void theRecordsSearch_findsOnlyTheRegistrations() {
    Set<String> found = existingFilesNamingRetry(Path.of("src/main"));
    assertThat(found)
        .as("existing main files that name retry control (decision 0011's search)")
        .isSubsetOf(union(REGISTRATIONS, Set.of(OPTIONAL)));
    found.remove(OPTIONAL);
    assertThat(found).as("existing files a re-add must touch").hasSizeLessThanOrEqualTo(2);
  }

  @Test
  void theRule_bites() {
    JavaClass breaker = new ClassFileImporter().importClass(NamesRetry.class);
    assertThat(
            ONLY_THE_FEATURE_LIST_NAMES_RETRY
                .evaluate(new ClassFileImporter().importClasses(NamesRetry.class))
                .hasViolation())
        .as("%s names RetryPolicy", breaker.getName())
        .isTrue();
    assertThat(NAMES_RETRY.matcher("    RetryPolicy retries = config.retries();").find()).isTrue();
    assertThat(NAMES_RETRY.matcher("  var attempts = store.attempts(key);").find()).isFalse();
  }

  /** Names a retry class on purpose (test sources only). */
  static final class NamesRetry {
    @SuppressWarnings("unused")
    io.sluice.core.retry.RetryPolicy policy() {
      return io.sluice.core.retry.RetryPolicy.DEFAULTS;
    }
  }

  /**
   * Files under {@code mainRoot} (its {@code java} and {@code resources}) outside retry's own whose
   * code lines (comments skipped in Java sources) match {@link #NAMES_RETRY}.
   */
  static Set<String> existingFilesNamingRetry(Path mainRoot) {
    Set<String> out = new TreeSet<>();
    try (Stream<Path> walk = Files.walk(mainRoot)) {
      for (Path p : walk.filter(Files::isRegularFile).toList()) {
        String rel = mainRoot.relativize(p).toString().replace('\\', '/');
        if (OWN_FILE.matcher(rel).matches()) {
          continue;
        }
        List<String> text;
        try {
          text = Files.readAllLines(p);
        } catch (java.nio.charset.MalformedInputException binary) {
          continue;
        }
        boolean java = rel.endsWith(".java");
        if (text.stream()
            .filter(l -> !java || !isComment(l))
            .anyMatch(l -> NAMES_RETRY.matcher(l).find())) {
          out.add(rel);
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out;
  }

  private static boolean isComment(String line) {
    String s = line.strip();
    return s.startsWith("*") || s.startsWith("//") || s.startsWith("/*");
  }

  private static Set<String> union(Set<String> a, Set<String> b) {
    Set<String> u = new TreeSet<>(a);
    u.addAll(b);
    return u;
  }
}
