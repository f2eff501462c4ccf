package io.sluice.core.share;

/**
 * One class's part of a replica's demand ({@link Demand}); the stores carry it to the peers.
 *
 * @param demandWork work in flight (as asked), waiting and refused for want of capacity
 * @param demandRequests requests in flight, waiting and refused
 * @param inFlightWork work in flight as counted against the share
 * @param inFlightRequests requests in flight
 * @param headWork the work the request first in the class's queue asks for (0: none waits)
 */
public record ClassDemand(
    String name,
    long demandWork,
    int demandRequests,
    long inFlightWork,
    int inFlightRequests,
    long headWork) {}
