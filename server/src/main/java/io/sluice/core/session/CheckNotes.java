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
  public static final CheckNotes NONE = new CheckNotes(null, new Object[0]);

  private final @Nullable Object one; // a note alone (most requests): no array
  private final Object[] notes; // else these (empty when one)

  private CheckNotes(@Nullable Object one, Object[] notes) {
    this.one = one;
    this.notes = notes;
  }

  /** Several notes, in order of acquisition ({@link CheckRun#notes}). */
  static CheckNotes many(Object[] notes) {
    return new CheckNotes(null, notes);
  }

  // the last note alone, as made: a note many requests share (a plain original's attempt, the same
  // value each time) is made into notes once, not once per request
  private static volatile @Nullable CheckNotes lastOne;

  /** One note alone: the last ones made again when the note is that same value ({@code ==}). */
  static CheckNotes one(Object note) {
    CheckNotes last = lastOne;
    if (last != null && last.one == note) {
      return last;
    }
    CheckNotes made = new CheckNotes(note, NONE.notes);
    lastOne = made;
    return made;
  }

  /** The first note of {@code type}, or null. */
  public <T> @Nullable T get(Class<T> type) {
    Object o = one;
    if (o != null) {
      return type.isInstance(o) ? type.cast(o) : null;
    }
    for (int i = 0; i < notes.length; i++) {
      if (type.isInstance(notes[i])) {
        return type.cast(notes[i]);
      }
    }
    return null;
  }
}
