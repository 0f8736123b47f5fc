-- Kiro responses: what the side decoder read from the event stream (frames per event type,
-- exception types, metered usage). Names and numbers only, never content. NULL for other surfaces.
ALTER TABLE gateway_inference_log ADD COLUMN stream jsonb;
