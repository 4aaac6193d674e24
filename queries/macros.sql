-- Macros shared by the rules' queries (and available to user rules): created as TEMP macros on the
-- analysis connection before the rules run. Names start with ks_.

-- the analysis window: $since/$until (NULL = unbounded) as TIMESTAMPTZ bounds
CREATE OR REPLACE TEMP MACRO ks_window_start(since) AS coalesce(CAST(since AS TIMESTAMPTZ), '-infinity'::TIMESTAMPTZ);
CREATE OR REPLACE TEMP MACRO ks_window_end(until) AS coalesce(CAST(until AS TIMESTAMPTZ), 'infinity'::TIMESTAMPTZ);

-- times in evidence: RFC3339 UTC with microseconds, milliseconds or seconds
CREATE OR REPLACE TEMP MACRO ks_time_us(t) AS strftime(t AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S.%fZ');
CREATE OR REPLACE TEMP MACRO ks_time_ms(t) AS strftime(t AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S.%gZ');
CREATE OR REPLACE TEMP MACRO ks_time_s(t) AS strftime(t AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%SZ');

-- a *_usernames parameter (comma-separated users, e.g. the endpoints controllers) as a list
CREATE OR REPLACE TEMP MACRO ks_usernames(csv) AS list_filter(string_split(csv, ','), u -> u <> '');

-- the start of a rule's lookback: $lookback_since, else $since (NULL = unbounded)
CREATE OR REPLACE TEMP MACRO ks_lookback_start(lookback_since, since) AS coalesce(CAST(lookback_since AS TIMESTAMPTZ), CAST(since AS TIMESTAMPTZ), '-infinity'::TIMESTAMPTZ);
