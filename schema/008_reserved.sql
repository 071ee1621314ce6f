-- flydb schema, version 8: reserved for the trace tables (schema 008 of
-- the trace work); this placeholder changes nothing and is replaced by the
-- real version 8 when both are merged.
SELECT 1;
