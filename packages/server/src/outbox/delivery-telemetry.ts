/**
 * What the dispatcher tells telemetry about each ordered delivery attempt (metrics, and with traces on a span
 * whose context goes along as `traceparent`), declared here so the outbox knows nothing of Prometheus or
 * OpenTelemetry (telemetry/ implements it).
 */
export interface DeliveryTelemetry {
  attemptStarted(
    endpoint: string,
    event: { eventId: string; receiptId: string | null },
  ): {
    /** Extra request headers (the W3C `traceparent` of the call the event reports, when traces are on). */
    headers?: Readonly<Record<string, string>>;
    end(result: { status: number | null; error: string | null }): void;
  };
}
