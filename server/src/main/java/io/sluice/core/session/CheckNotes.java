package io.sluice.core.session;

import org.jspecify.annotations.Nullable;

/**
 * What the checks of one request noted of it ({@link AdmissionCheck.Held#note()}), in the order
 * they held: a check's own immutable value (retry control's attempt), carried by {@link
 * RequestFacts} so that its listener reads it without {@code RequestFacts} knowing the type.
 * Immutable; {@link #NONE} (no allocation) when no hold noted anything.
 */
public final class CheckNotes {
  /** Nothing noted. */
  public static final CheckNotes NONE = new CheckNotes(new Object[0], 0);

  private final Object[] notes;
  private final int count;

  private CheckNotes(Object[] notes, int count) {
    this.notes = notes;
    this.count = count;
  }

  /**
   * The notes of these holds (the first {@code count}), or {@link #NONE}; a single note's is made
   * once per request (the hold keeps it), so the facts of each event allocate none.
   */
  static CheckNotes of(AdmissionCheck.Held @Nullable [] held, int count) {
    int noted = 0;
    int first = -1;
    for (int i = 0; held != null && i < count; i++) {
      if (held[i].note() != null) {
        noted++;
        first = first < 0 ? i : first;
      }
    }
    if (held == null || noted == 0) {
      return NONE;
    }
    if (noted == 1) {
      return held[first].alone(java.util.Objects.requireNonNull(held[first].note()));
    }
    Object[] n = new Object[noted];
    int k = 0;
    for (int i = 0; i < count; i++) {
      Object o = held[i].note();
      if (o != null) {
        n[k++] = o;
      }
    }
    return new CheckNotes(n, k);
  }

  /** One note alone. */
  static CheckNotes one(Object note) {
    return new CheckNotes(new Object[] {note}, 1);
  }

  /** The first note of {@code type}, or null. */
  public <T> @Nullable T get(Class<T> type) {
    for (int i = 0; i < count; i++) {
      if (type.isInstance(notes[i])) {
        return type.cast(notes[i]);
      }
    }
    return null;
  }
}
