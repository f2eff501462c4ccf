package io.sluice.observability;

import io.sluice.config.DecisionLogFile;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * The decision log's rotating file ({@code decisionLog.file}): one JSON line per record, appended
 * to {@code path}; the file is rolled to {@code path.1} (the older ones shifted to {@code .2} ...
 * {@code .maxFiles}, the oldest deleted) when the next line would take it past {@code maxBytes} or
 * when it is {@code maxAge} old on the injected clock. Lines are flushed at once (a replay reads
 * the file while it grows; a crash loses no written record). Writes that fail are counted ({@link
 * #failed}), never thrown into a request's path.
 *
 * <p>Thread-safe: one monitor around a write and a roll.
 */
public final class RotatingFile implements Consumer<String>, AutoCloseable {
  private final DecisionLogFile settings;
  private final Path path;
  private final LongSupplier nanos;
  private final AtomicLong failed = new AtomicLong();
  private final AtomicLong rolled = new AtomicLong();
  // guarded by this
  private @Nullable BufferedWriter out;
  private long size;
  private long openedAt;

  public RotatingFile(DecisionLogFile settings, LongSupplier nanos) {
    if (!settings.enabled()) {
      throw new IllegalArgumentException("decisionLog.file.path is empty");
    }
    this.settings = settings;
    this.path = Path.of(settings.path());
    this.nanos = nanos;
  }

  /** The settings this file was opened with (a reload with others opens another). */
  public DecisionLogFile settings() {
    return settings;
  }

  @Override
  public synchronized void accept(String line) {
    byte[] bytes = (line + "\n").getBytes(StandardCharsets.UTF_8);
    try {
      long now = nanos.getAsLong();
      BufferedWriter w = out;
      if (w != null
          && (size + bytes.length > settings.maxBytes()
              || now - openedAt >= settings.maxAge().toNanos())) {
        roll();
        w = null;
      }
      if (w == null) {
        w = open(now);
      }
      w.write(line);
      w.write('\n');
      w.flush();
      size += bytes.length;
    } catch (IOException | UncheckedIOException e) {
      failed.incrementAndGet();
      closeQuietly();
    }
  }

  private BufferedWriter open(long now) throws IOException {
    Path dir = path.toAbsolutePath().getParent();
    if (dir != null) {
      Files.createDirectories(dir);
    }
    BufferedWriter w =
        Files.newBufferedWriter(
            path, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    out = w;
    size = Files.size(path);
    openedAt = now;
    return w;
  }

  /** Closes the current file and shifts the rolled ones: path -> path.1 -> ... -> deleted. */
  private void roll() throws IOException {
    closeQuietly();
    int keep = settings.maxFiles();
    Files.deleteIfExists(rolledPath(keep));
    for (int i = keep - 1; i >= 1; i--) {
      Path from = rolledPath(i);
      if (Files.exists(from)) {
        Files.move(from, rolledPath(i + 1), StandardCopyOption.REPLACE_EXISTING);
      }
    }
    if (Files.exists(path)) {
      Files.move(path, rolledPath(1), StandardCopyOption.REPLACE_EXISTING);
    }
    rolled.incrementAndGet();
  }

  /** {@code path.n}: the n-th most recent rolled file. */
  public Path rolledPath(int n) {
    return path.resolveSibling(path.getFileName() + "." + n);
  }

  /** Lines that could not be written (the file or its directory failed). */
  public long failed() {
    return failed.get();
  }

  /** Times the file was rolled. */
  public long rolled() {
    return rolled.get();
  }

  private void closeQuietly() {
    BufferedWriter w = out;
    out = null;
    if (w != null) {
      try {
        w.close();
      } catch (IOException e) {
        failed.incrementAndGet();
      }
    }
  }

  @Override
  public synchronized void close() {
    closeQuietly();
  }

  /**
   * The process's decision-log file across config snapshots: the same file while the settings are
   * the same, the old one closed when a reload changes them. Thread-safe.
   */
  public static final class Holder implements AutoCloseable {
    private final LongSupplier nanos;
    private @Nullable RotatingFile current; // guarded by this
    private long failedBefore; // lines failed in files closed since; guarded by this

    public Holder(LongSupplier nanos) {
      this.nanos = nanos;
    }

    /** The file of {@code settings}, or null when it names none. */
    public synchronized @Nullable RotatingFile file(DecisionLogFile settings) {
      RotatingFile f = current;
      if (f != null && f.settings().equals(settings)) {
        return f;
      }
      if (f != null) {
        failedBefore += f.failed();
        f.close();
      }
      current = settings.enabled() ? new RotatingFile(settings, nanos) : null;
      return current;
    }

    /** Lines not written, over every file this holder opened. */
    public synchronized long failed() {
      RotatingFile f = current;
      return failedBefore + (f == null ? 0 : f.failed());
    }

    @Override
    public synchronized void close() {
      RotatingFile f = current;
      if (f != null) {
        f.close();
      }
    }
  }
}
