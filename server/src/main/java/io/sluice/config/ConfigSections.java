package io.sluice.config;

import java.util.ArrayList;
import java.util.List;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.TreeSet;

/**
 * The registered {@link ConfigSection}s, in registration order: the ones the classpath declares
 * ({@link #installed()}, what {@link ConfigLoader#parse(String)} reads), or a list of one's own
 * (tests of a section). Immutable.
 */
public final class ConfigSections {
  private static final ConfigSections INSTALLED = load();

  private final List<ConfigSection<?>> sections;

  private ConfigSections(List<ConfigSection<?>> sections) {
    Set<String> names = new TreeSet<>();
    for (ConfigSection<?> s : sections) {
      if (!names.add(s.name())) {
        throw new IllegalArgumentException("two config sections named " + s.name());
      }
    }
    this.sections = List.copyOf(sections);
  }

  /**
   * The sections of {@code META-INF/services/io.sluice.config.ConfigSection}, in the order the
   * class path lists them.
   */
  public static ConfigSections installed() {
    return INSTALLED;
  }

  /** These sections, in this order. */
  public static ConfigSections of(List<? extends ConfigSection<?>> sections) {
    return new ConfigSections(new ArrayList<>(sections));
  }

  /** These sections and {@code more} after them. */
  public ConfigSections with(ConfigSection<?> more) {
    List<ConfigSection<?>> all = new ArrayList<>(sections);
    all.add(more);
    return new ConfigSections(all);
  }

  public List<ConfigSection<?>> list() {
    return sections;
  }

  private static ConfigSections load() {
    List<ConfigSection<?>> found = new ArrayList<>();
    for (ConfigSection<?> s : ServiceLoader.load(ConfigSection.class)) {
      found.add(s);
    }
    return new ConfigSections(found);
  }
}
