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

  /** Several notes, in order of acquisition ({@link CheckRun#notes}). */
  static CheckNotes many(Object[] notes) {
    return new CheckNotes(notes, notes.length);
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
