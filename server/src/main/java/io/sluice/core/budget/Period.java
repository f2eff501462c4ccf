package io.sluice.core.budget;

import java.time.DayOfWeek;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.OffsetDateTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.temporal.TemporalAdjusters;
import java.util.Locale;
import java.util.Objects;

/**
 * A budget's billing period: a calendar day, week or month in a time zone (its boundaries follow
 * the zone's local midnight, whatever the daylight-saving shift), or a rolling window of a fixed
 * length counted in slices.
 */
public sealed interface Period permits Period.Calendar, Period.Rolling {

  /** The window {@code now} falls in. */
  Window at(Instant now);

  /** The time zone its windows are told in: a calendar period's own; UTC for a rolling one. */
  default ZoneId zone() {
    return ZoneOffset.UTC;
  }

  /**
   * {@code at} as the client is told it (a window's end: {@code x-sluice-budget-reset}, a refusal's
   * {@code period_end}): RFC 3339 with the offset {@link #zone()} has then, {@code Z} in UTC (say
   * {@code 2026-03-30T00:00:00+02:00} for the end of 29 March in Europe/Berlin).
   */
  default String stamp(Instant at) {
    return OffsetDateTime.ofInstant(at, zone()).format(DateTimeFormatter.ISO_OFFSET_DATE_TIME);
  }

  /**
   * One window of a period: spend is counted per window id, and the window ends at {@code end} (for
   * a rolling period, the id is the current slice and {@code start} the oldest slice counted).
   */
  record Window(String id, Instant start, Instant end, boolean rolling) {
    public Window {
      Objects.requireNonNull(id, "id");
      if (!end.isAfter(start)) {
        throw new IllegalArgumentException("window end " + end + " not after start " + start);
      }
    }

    /** The window's length. */
    public Duration length() {
      return Duration.between(start, end);
    }

    /** The time left in the window at {@code now} (zero at or after its end). */
    public Duration remaining(Instant now) {
      return now.isBefore(end) ? Duration.between(now, end) : Duration.ZERO;
    }

    /**
     * The time the budget not yet spent is spread over when paced: what is left of a calendar
     * window; a rolling window's whole length (its oldest slice drops out as time goes on).
     */
    public Duration paceHorizon(Instant now) {
      return rolling ? length() : remaining(now);
    }
  }

  /** A calendar unit of a period. */
  enum Unit {
    DAY,
    WEEK,
    MONTH;

    /** The config spelling ({@code day}, {@code week}, {@code month}). */
    public String spelling() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /** A calendar day, week (starting on {@code weekStart}) or month in {@code zone}. */
  record Calendar(Unit unit, ZoneId zone, DayOfWeek weekStart) implements Period {
    public Calendar {
      Objects.requireNonNull(unit, "unit");
      Objects.requireNonNull(zone, "zone");
      Objects.requireNonNull(weekStart, "weekStart");
    }

    @Override
    public Window at(Instant now) {
      LocalDate today = now.atZone(zone).toLocalDate();
      LocalDate first =
          switch (unit) {
            case DAY -> today;
            case WEEK -> today.with(TemporalAdjusters.previousOrSame(weekStart));
            case MONTH -> today.withDayOfMonth(1);
          };
      LocalDate next =
          switch (unit) {
            case DAY -> first.plusDays(1);
            case WEEK -> first.plusWeeks(1);
            case MONTH -> first.plusMonths(1);
          };
      // atStartOfDay: the zone's first instant of the date (01:00 where midnight is skipped)
      ZonedDateTime start = first.atStartOfDay(zone);
      ZonedDateTime end = next.atStartOfDay(zone);
      return new Window(
          unit.spelling().charAt(0) + ":" + first, start.toInstant(), end.toInstant(), false);
    }
  }

  /**
   * A rolling window of {@code length}, counted in {@code slices} equal slices (the spend of the
   * last {@code slices} slices, the current one included, is the window's spend).
   */
  record Rolling(Duration length, int slices) implements Period {
    public Rolling {
      if (length.isNegative() || length.isZero()) {
        throw new IllegalArgumentException("rolling length " + length + " (expected: > 0)");
      }
      if (slices < 1 || slices > 1440) {
        throw new IllegalArgumentException("rolling slices " + slices + " (expected: 1..1440)");
      }
      if (length.toMillis() / slices < 1000) {
        throw new IllegalArgumentException(
            "rolling slice " + length.dividedBy(slices) + " (expected: >= 1s)");
      }
    }

    /** One slice's length. */
    public Duration slice() {
      return length.dividedBy(slices);
    }

    /** The index of the slice {@code now} falls in (since the epoch). */
    public long sliceIndex(Instant now) {
      return Math.floorDiv(now.toEpochMilli(), slice().toMillis());
    }

    @Override
    public Window at(Instant now) {
      long i = sliceIndex(now);
      long sliceMillis = slice().toMillis();
      Instant end = Instant.ofEpochMilli((i + 1) * sliceMillis);
      Instant start = Instant.ofEpochMilli((i + 1 - slices) * sliceMillis);
      return new Window("r:" + i, start, end, true);
    }
  }
}
