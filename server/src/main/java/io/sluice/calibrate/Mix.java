package io.sluice.calibrate;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.sluice.config.ConfigException;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Random;
import java.util.Set;

/**
 * The request mix of a calibration run, from a small YAML:
 *
 * <pre>
 * requests:
 *   - {weight: 6, promptTokens: 400, maxTokens: 128}
 *   - {weight: 1, promptTokens: 3000, maxTokens: 512}
 * </pre>
 *
 * Each request draws one entry with probability {@code weight / sum of weights}. Errors name the
 * field and the expected value, as the policy's do ({@code requests[1].weight: -1 (expected: a
 * number > 0)}); unknown keys are errors.
 */
public record Mix(List<Mix.Entry> entries) {
  /** Largest promptTokens accepted (the filler text is about 4 characters per token). */
  public static final int MAX_PROMPT_TOKENS = 1_000_000;

  /** Largest maxTokens accepted. */
  public static final int MAX_OUTPUT_TOKENS = 1_000_000;

  private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
  private static final String DEFAULT_RESOURCE = "/io/sluice/calibrate/default-mix.yaml";

  /**
   * One kind of request.
   *
   * @param weight relative frequency, {@code > 0}
   * @param promptTokens approximate prompt size in tokens, {@code >= 1}
   * @param maxTokens {@code max_tokens} sent (the output Sluice reserves), {@code >= 1}
   */
  public record Entry(double weight, int promptTokens, int maxTokens) {}

  public Mix {
    entries = List.copyOf(entries);
    if (entries.isEmpty()) {
      throw new IllegalArgumentException("requests: empty (expected: at least one entry)");
    }
  }

  /** The embedded default mix. */
  public static Mix embeddedDefault() {
    return parse(embeddedDefaultYaml());
  }

  /** The embedded default mix's YAML text (with its comments). */
  public static String embeddedDefaultYaml() {
    try (InputStream in = Mix.class.getResourceAsStream(DEFAULT_RESOURCE)) {
      if (in == null) {
        throw new IllegalStateException("missing embedded mix " + DEFAULT_RESOURCE);
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  public static Mix load(Path file) throws IOException {
    return parse(Files.readString(file, StandardCharsets.UTF_8));
  }

  /** Parses and validates; throws {@link ConfigException} listing every error. */
  public static Mix parse(String yaml) {
    JsonNode root;
    try {
      root = YAML.readTree(yaml);
    } catch (IOException e) {
      String m = e.getMessage() == null ? "" : e.getMessage();
      int nl = m.indexOf('\n');
      throw new ConfigException(
          List.of("(document): not valid YAML: " + (nl < 0 ? m : m.substring(0, nl))));
    }
    List<String> errors = new ArrayList<>();
    if (root == null || !root.isObject()) {
      throw new ConfigException(
          List.of(
              "(document): "
                  + (root == null || root.isMissingNode() ? "empty" : kind(root))
                  + " (expected: a mapping with requests: [{weight, promptTokens, maxTokens}, ...])"));
    }
    unknownKeys(root, "", Set.of("requests"), errors);
    JsonNode list = root.get("requests");
    List<Entry> entries = new ArrayList<>();
    if (list == null || list.isNull()) {
      errors.add("requests: missing (expected: a list of {weight, promptTokens, maxTokens})");
    } else if (!list.isArray()) {
      errors.add(
          "requests: " + kind(list) + " (expected: a list of {weight, promptTokens, maxTokens})");
    } else if (list.isEmpty()) {
      errors.add("requests: [] (expected: at least one entry)");
    } else {
      for (int i = 0; i < list.size(); i++) {
        String path = "requests[" + i + "]";
        JsonNode e = list.get(i);
        if (!e.isObject()) {
          errors.add(
              path + ": " + kind(e) + " (expected: a mapping {weight, promptTokens, maxTokens})");
          continue;
        }
        unknownKeys(e, path, Set.of("weight", "promptTokens", "maxTokens"), errors);
        int before = errors.size();
        double weight = number(e, path, "weight", 1.0, errors);
        long prompt = integer(e, path, "promptTokens", 1, MAX_PROMPT_TOKENS, errors);
        long max = integer(e, path, "maxTokens", 1, MAX_OUTPUT_TOKENS, errors);
        if (errors.size() == before) {
          entries.add(new Entry(weight, (int) prompt, (int) max));
        }
      }
    }
    if (!errors.isEmpty()) {
      throw new ConfigException(errors);
    }
    return new Mix(entries);
  }

  private static void unknownKeys(
      JsonNode node, String path, Set<String> allowed, List<String> errors) {
    Iterator<String> it = node.fieldNames();
    while (it.hasNext()) {
      String k = it.next();
      if (!allowed.contains(k)) {
        errors.add(
            (path.isEmpty() ? k : path + "." + k)
                + ": unknown key (expected one of: "
                + String.join(", ", new java.util.TreeSet<>(allowed))
                + ")");
      }
    }
  }

  private static double number(
      JsonNode e, String path, String key, double def, List<String> errors) {
    JsonNode v = e.get(key);
    if (v == null || v.isNull()) {
      return def;
    }
    if (!v.isNumber() || !(v.asDouble() > 0) || Double.isInfinite(v.asDouble())) {
      errors.add(path + "." + key + ": " + v + " (expected: a number > 0)");
      return def;
    }
    return v.asDouble();
  }

  private static long integer(
      JsonNode e, String path, String key, long min, long max, List<String> errors) {
    JsonNode v = e.get(key);
    if (v == null || v.isNull()) {
      errors.add(path + "." + key + ": missing (expected: an integer in " + min + ".." + max + ")");
      return min;
    }
    if (!v.isIntegralNumber() || v.asLong() < min || v.asLong() > max) {
      errors.add(
          path + "." + key + ": " + v + " (expected: an integer in " + min + ".." + max + ")");
      return min;
    }
    return v.asLong();
  }

  private static String kind(JsonNode n) {
    return n.isContainerNode()
        ? n.getNodeType().name().toLowerCase(java.util.Locale.ROOT)
        : n.toString();
  }

  /** An entry drawn by weight. */
  public Entry pick(Random random) {
    double total = totalWeight();
    double x = random.nextDouble() * total;
    for (Entry e : entries) {
      x -= e.weight();
      if (x < 0) {
        return e;
      }
    }
    return entries.get(entries.size() - 1);
  }

  /**
   * {@code n} entries in the mix's proportions (largest remainder), shuffled: a step that draws its
   * requests from it gets the same mix as every other step, so the steps differ by their
   * concurrency, not by the luck of the draw.
   */
  public List<Entry> deck(int n, Random random) {
    double total = totalWeight();
    int[] counts = new int[entries.size()];
    double[] remainders = new double[entries.size()];
    int dealt = 0;
    for (int i = 0; i < entries.size(); i++) {
      double exact = n * entries.get(i).weight() / total;
      counts[i] = (int) Math.floor(exact);
      remainders[i] = exact - counts[i];
      dealt += counts[i];
    }
    while (dealt < n) {
      int best = 0;
      for (int i = 1; i < remainders.length; i++) {
        if (remainders[i] > remainders[best]) {
          best = i;
        }
      }
      counts[best]++;
      remainders[best] = -1;
      dealt++;
    }
    List<Entry> deck = new ArrayList<>(n);
    for (int i = 0; i < entries.size(); i++) {
      for (int k = 0; k < counts[i]; k++) {
        deck.add(entries.get(i));
      }
    }
    java.util.Collections.shuffle(deck, random);
    return deck;
  }

  private double totalWeight() {
    double t = 0;
    for (Entry e : entries) {
      t += e.weight();
    }
    return t;
  }

  /** The weighted mean of promptTokens. */
  public double meanPromptTokens() {
    double s = 0;
    for (Entry e : entries) {
      s += e.weight() * e.promptTokens();
    }
    return s / totalWeight();
  }

  /** The weighted mean of maxTokens (the output Sluice reserves per request). */
  public double meanMaxTokens() {
    double s = 0;
    for (Entry e : entries) {
      s += e.weight() * e.maxTokens();
    }
    return s / totalWeight();
  }

  /** A human summary, e.g. {@code 3 kinds: 60% 400+128, 30% 1500+256, 10% 3000+512}. */
  public String describe() {
    StringBuilder b = new StringBuilder();
    double total = totalWeight();
    b.append(entries.size()).append(entries.size() == 1 ? " kind: " : " kinds: ");
    for (int i = 0; i < entries.size(); i++) {
      Entry e = entries.get(i);
      if (i > 0) {
        b.append(", ");
      }
      b.append(Math.round(100 * e.weight() / total))
          .append("% ")
          .append(e.promptTokens())
          .append(" prompt + ")
          .append(e.maxTokens())
          .append(" max output");
    }
    return b.toString();
  }

  private static final String[] WORDS = {
    "the", "sun", "and", "sea", "one", "two", "red", "map", "cat", "dog", "ant", "owl", "fig",
        "oak",
    "elm", "ink", "jar", "key", "log", "net", "pen", "rug", "sky", "toy", "urn", "van", "web", "yak"
  };

  /**
   * Filler prompt text of about {@code tokens} tokens: three-letter words and a space, 4 characters
   * each (one token for the common tokenizers, and {@code bytes / 4} for simple estimators), after
   * a per-request {@code nonce} so that no two prompts share a cacheable prefix.
   */
  public static String filler(int tokens, long nonce) {
    StringBuilder b = new StringBuilder(tokens * 4 + 32);
    b.append("req ").append(nonce).append(' ');
    Random r = new Random(nonce);
    int words = Math.max(1, tokens - 2);
    for (int i = 0; i < words; i++) {
      b.append(WORDS[r.nextInt(WORDS.length)]).append(' ');
    }
    return b.toString();
  }
}
