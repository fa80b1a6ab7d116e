"""The general grounder: a grounding VLM turns an element description into a point on screen."""
