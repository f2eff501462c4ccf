package io.sluice.config;

import io.sluice.config.SluiceConfig.Signal;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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
  private final List<Signal> signals;

  private ConfigSections(List<ConfigSection<?>> sections) {
    Set<String> names = new TreeSet<>();
    Map<String, Signal> byKey = new LinkedHashMap<>();
    Signal.BUILT_IN.forEach(sig -> byKey.put(sig.key(), sig));
    for (ConfigSection<?> s : sections) {
      if (!names.add(s.name())) {
        throw new IllegalArgumentException("two config sections named " + s.name());
      }
      for (Signal sig : s.declaredSignals()) {
        Signal known = byKey.putIfAbsent(sig.key(), sig);
        if (known != null && known.isGuarded() != sig.isGuarded()) {
          throw new IllegalArgumentException(
              "section " + s.name() + " declares signal " + sig.key() + " guarded otherwise");
        }
      }
    }
    for (ConfigSection<?> s : sections) {
      for (String key : s.signalHeaders().keySet()) {
        if (!byKey.containsKey(key)) {
          throw new IllegalArgumentException(
              "section " + s.name() + " gives a default header to undeclared signal " + key);
        }
      }
      for (String key : s.signalAttributes().keySet()) {
        if (!byKey.containsKey(key)) {
          throw new IllegalArgumentException(
              "section " + s.name() + " gives a default attribute to undeclared signal " + key);
        }
      }
    }
    this.sections = List.copyOf(sections);
    this.signals = List.copyOf(byKey.values());
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

  /**
   * The signals a policy may name under {@code signals:}: the built-in ones, then those the
   * sections declare ({@link ConfigSection#declaredSignals}), in registration order.
   */
  public List<Signal> signals() {
    return signals;
  }

  /** Whether {@code key} is a signal of {@link #signals()}. */
  boolean hasSignal(String key) {
    for (Signal s : signals) {
      if (s.key().equals(key)) {
        return true;
      }
    }
    return false;
  }

  private static ConfigSections load() {
    List<ConfigSection<?>> found = new ArrayList<>();
    for (ConfigSection<?> s : ServiceLoader.load(ConfigSection.class)) {
      found.add(s);
    }
    return new ConfigSections(found);
  }
}
