# %% [markdown]
# # Training on the copy task
